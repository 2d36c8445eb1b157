/* clock.h - the two clocks igw reads: monotonic for durations, deadlines
 * and cache ages inside one process; wall (Unix epoch) for times that are
 * stored, sent or compared across processes. */
#ifndef IGW_CLOCK_H
#define IGW_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds (an arbitrary origin). */
static inline int64_t igw_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic microseconds (an arbitrary origin). */
static inline uint64_t igw_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Unix time in milliseconds. */
static inline int64_t igw_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
