/* The fuzz input as the C string a text parser reads. */
#ifndef PF_FUZZ_TEXT_H
#define PF_FUZZ_TEXT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A NUL-terminated copy of data (free it); NULL when out of memory. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);

    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

#endif
