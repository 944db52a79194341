/* The native tests' one assertion: count, report with file and line, keep going. */
#ifndef TURTLES_TESTS_CHECK_H
#define TURTLES_TESTS_CHECK_H

#include <stdio.h>

static int failures, checks;

#define CHECK(cond)                                                                 \
    do {                                                                            \
        checks++;                                                                   \
        if (!(cond)) {                                                              \
            failures++;                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                           \
    } while (0)

#endif
