/* lexer.re - schema language lexer; re2c turns this into lexer.c.
 *
 * Comments run from '#' or '//' to the end of the line. Keywords are not
 * reserved here: the parser treats them as contextual identifiers, so a field
 * may be called `type` or `state` like the spec's own fields. */
#include "lexer.h"

#include <string.h>

#include "util.h"

void igw_lexer_init(igw_lexer *lx, const char *file, const char *buf, size_t len)
{
    lx->file = file;
    lx->buf = lx->cur = lx->line_start = buf;
    lx->lim = buf + len;
    lx->line = 1;
}

static igw_token tok(igw_lexer *lx, igw_tok kind, const char *start)
{
    igw_token t = {kind, NULL, 0, {lx->file, lx->line, (int)(start - lx->line_start) + 1}};
    return t;
}

/* Decodes the body of a string literal (between the quotes). */
static char *unquote(const char *s, size_t n)
{
    char *r = igw_xmalloc(n + 1), *w = r;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            i++;
            *w++ = s[i] == 'n' ? '\n' : s[i] == 't' ? '\t' : s[i];
        } else {
            *w++ = s[i];
        }
    }
    *w = '\0';
    return r;
}

igw_token igw_lexer_next(igw_lexer *lx)
{
    const char *YYMARKER;
    for (;;) {
        const char *start = lx->cur;
        if (lx->cur >= lx->lim)
            return tok(lx, TOK_EOF, start);
        /*!re2c
            re2c:define:YYCTYPE = "unsigned char";
            re2c:define:YYCURSOR = "lx->cur";
            re2c:define:YYMARKER = "YYMARKER";
            re2c:yyfill:enable = 0;

            "\x00" {
                if (lx->cur > lx->lim)
                    return tok(lx, TOK_EOF, start);
                igw_token t = tok(lx, TOK_ERROR, start);
                t.text = "NUL byte in schema source";
                return t;
            }
            [ \t\r]+ { continue; }
            "\n" { lx->line++; lx->line_start = lx->cur; continue; }
            ("#" | "//") [^\n\x00]* { continue; }

            [a-zA-Z_][a-zA-Z0-9_]* {
                igw_token t = tok(lx, TOK_IDENT, start);
                t.text = igw_xstrndup(start, (size_t)(lx->cur - start));
                return t;
            }
            [0-9]+ {
                igw_token t = tok(lx, TOK_INT, start);
                int64_t v = 0;
                for (const char *p = start; p < lx->cur; p++)
                    v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (*p - '0');
                t.value = v;
                return t;
            }
            ["] ([^"\\\n\x00] | [\\][^\n\x00])* ["] {
                igw_token t = tok(lx, TOK_STRING, start);
                t.text = unquote(start + 1, (size_t)(lx->cur - start - 2));
                return t;
            }
            ["] {
                igw_token t = tok(lx, TOK_ERROR, start);
                t.text = "unterminated string literal";
                return t;
            }
            "{" { return tok(lx, TOK_LBRACE, start); }
            "}" { return tok(lx, TOK_RBRACE, start); }
            "(" { return tok(lx, TOK_LPAREN, start); }
            ")" { return tok(lx, TOK_RPAREN, start); }
            ";" { return tok(lx, TOK_SEMI, start); }
            ":" { return tok(lx, TOK_COLON, start); }
            "," { return tok(lx, TOK_COMMA, start); }
            ".." { return tok(lx, TOK_DOTDOT, start); }
            "." { return tok(lx, TOK_DOT, start); }
            "=" { return tok(lx, TOK_EQ, start); }
            "!=" { return tok(lx, TOK_NE, start); }
            "<=" { return tok(lx, TOK_LE, start); }
            "<" { return tok(lx, TOK_LT, start); }
            ">=" { return tok(lx, TOK_GE, start); }
            ">" { return tok(lx, TOK_GT, start); }
            "->" { return tok(lx, TOK_ARROW, start); }
            "-" { return tok(lx, TOK_MINUS, start); }
            "*" { return tok(lx, TOK_STAR, start); }
            * {
                igw_token t = tok(lx, TOK_ERROR, start);
                t.text = "unexpected character";
                return t;
            }
        */
    }
}

const char *igw_tok_name(igw_tok kind)
{
    static const char *const names[] = {
        "end of file", "invalid token", "identifier", "string", "integer",
        "'{'", "'}'", "'('", "')'", "';'", "':'", "','", "'.'", "'..'",
        "'='", "'!='", "'<'", "'<='", "'>'", "'>='", "'->'", "'-'", "'*'",
    };
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "token";
}
