// bench_simdjson.cc - simdjson DOM parse, the speed-of-light contender of
// bench_decode: one dom::parser reused for every body, padded strings built
// once outside the timed loop, parse only (no schema validation).
#include "bench_simdjson.h"

#include <simdjson.h>

#include <new>
#include <vector>

struct sj_corpus {
    std::vector<simdjson::padded_string> bodies;
    simdjson::dom::parser parser;
};

extern "C" sj_corpus *sj_prepare(const char *const *bodies, const size_t *lens, size_t n)
{
    sj_corpus *c = new (std::nothrow) sj_corpus;
    if (c == nullptr)
        return nullptr;
    size_t max = 0;
    c->bodies.reserve(n);
    for (size_t i = 0; i < n; i++) {
        c->bodies.emplace_back(bodies[i], lens[i]);
        if (lens[i] > max)
            max = lens[i];
    }
    // Size the parser for the biggest body now, so no parse allocates.
    if (c->parser.allocate(max < 64 ? 64 : max) != simdjson::SUCCESS) {
        delete c;
        return nullptr;
    }
    return c;
}

extern "C" size_t sj_check(sj_corpus *c, const char **msg)
{
    for (size_t i = 0; i < c->bodies.size(); i++) {
        simdjson::dom::element doc;
        simdjson::error_code err = c->parser.parse(c->bodies[i]).get(doc);
        if (err != simdjson::SUCCESS) {
            *msg = simdjson::error_message(err);
            return i;
        }
    }
    return c->bodies.size();
}

extern "C" uint64_t sj_run(sj_corpus *c, size_t iters)
{
    uint64_t sum = 0;
    const size_t n = c->bodies.size();
    for (size_t it = 0; it < iters; it++) {
        for (size_t i = 0; i < n; i++) {
            simdjson::dom::element doc;
            if (c->parser.parse(c->bodies[i]).get(doc) != simdjson::SUCCESS) {
                sum += 1000003;
                continue;
            }
            simdjson::dom::object obj;
            sum += static_cast<uint64_t>(doc.type());
            if (doc.get(obj) == simdjson::SUCCESS)
                sum += obj.size();
        }
    }
    return sum;
}

extern "C" const char *sj_implementation(void)
{
    return simdjson::get_active_implementation()->name().c_str();
}

extern "C" void sj_free(sj_corpus *c)
{
    delete c;
}
