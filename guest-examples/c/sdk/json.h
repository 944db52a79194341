/* json.h - a small JSON library for turtles C controllers (parse, look up, build, serialize).
 *
 * A document is a tree of `json` nodes. Every node is heap-allocated and owned by its parent;
 * `json_free` on the root frees the whole tree. Functions that insert a node (`json_set`,
 * `json_push`) take ownership of it. Lookups return borrowed pointers into the tree: do not
 * free them, and do not use them after the root is freed.
 *
 * Strings are UTF-8 and carry their length (they may contain NUL via "\u0000"); `\uXXXX`
 * escapes including surrogate pairs are decoded, a lone surrogate becomes U+FFFD (as Go's
 * encoding/json does). Invalid UTF-8 in the input is an error. Numbers keep an exact 64-bit
 * integer when the text is an integer that fits, otherwise a double (a number beyond the double
 * range, e.g. 1e400, is a parse error); serialization writes integers exactly and doubles in the
 * shortest form that reads back to the same value.
 *
 * Objects keep their members in insertion order; on parse a repeated key replaces the earlier
 * value (last one wins).
 */
#ifndef TURTLES_JSON_H
#define TURTLES_JSON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
} json_type;

typedef struct json json;

/* ---- parsing and serializing ---------------------------------------------------------- */

/* Parses `len` bytes of JSON text (one value, optional surrounding whitespace). Returns the
 * tree, or NULL on error; then, if `err` is not NULL, a message ("line 1 column 7: ...") is
 * written to it (at most `errlen` bytes, NUL-terminated). Nesting deeper than 512 is an error. */
json *json_parse(const char *text, size_t len, char *err, size_t errlen);

/* json_parse of a NUL-terminated string, no error message. */
json *json_parse_str(const char *text);

/* Compact JSON text of `v`, malloc'ed and NUL-terminated; its length in *len if len is not
 * NULL. NULL only when out of memory. A NaN or infinite number is written as null. */
char *json_serialize(const json *v, size_t *len);

/* Frees `v` and everything under it. NULL is fine. Do not free a node that is still inside
 * a tree (use json_take / json_remove first). */
void json_free(json *v);

/* A deep copy. */
json *json_dup(const json *v);

/* Structural equality (object member order does not matter; 1 and 1.0 are equal). */
bool json_equal(const json *a, const json *b);

/* ---- building ------------------------------------------------------------------------- */

json *json_new_null(void);
json *json_new_bool(bool b);
json *json_new_int(int64_t i);
json *json_new_double(double d);
json *json_new_string(const char *s);            /* copies s (NULL gives null) */
json *json_new_stringn(const char *s, size_t n); /* copies n bytes */
json *json_new_stringf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
json *json_new_array(void);
json *json_new_object(void);

/* Builds a value from a JSON template with placeholders, so that no value needs escaping by
 * hand:  %s  a C string, written as a JSON string (NULL: null)
 *        %d  an int          %l  an int64_t        %u  an unsigned int     %g  a double
 *        %b  a bool (int): true/false
 *        %j  a const json *: copied in (NULL: null)
 *        %J  a json *: copied in, then freed (so a freshly built value can be passed inline)
 *        %%  a literal %
 * Placeholders are only recognized outside JSON strings; write keys literally or use %s in
 * key position. Returns NULL (and logs nothing) if the result is not valid JSON.
 * Example: json_build("{\"metadata\":{\"name\":%s,\"labels\":{%s:%s}}}", name, k, v) */
json *json_build(const char *fmt, ...);
json *json_vbuild(const char *fmt, va_list ap);

/* Object: sets member `key` to `v` (replacing and freeing an existing one); takes ownership
 * of v. Returns v, or NULL (and frees v) if obj is not an object. */
json *json_set(json *obj, const char *key, json *v);
json *json_set_str(json *obj, const char *key, const char *s);
json *json_set_int(json *obj, const char *key, int64_t i);
json *json_set_bool(json *obj, const char *key, bool b);
/* The object member `key`, created as {} if it is missing or not an object. */
json *json_set_object(json *obj, const char *key);
/* Array: appends v (takes ownership). Returns v, or NULL (and frees v) if arr is not an array. */
json *json_push(json *arr, json *v);

/* Object: detaches member `key` and returns it (the caller owns it), or NULL. */
json *json_take(json *obj, const char *key);
/* Array: detaches element i and returns it (the caller owns it), or NULL. */
json *json_take_at(json *arr, size_t i);
/* Object: removes and frees member `key`; true if it was there. */
bool json_remove(json *obj, const char *key);

/* ---- inspecting ----------------------------------------------------------------------- */

json_type json_typeof(const json *v); /* JSON_NULL for a NULL pointer */
bool json_is_null(const json *v);      /* also true for a NULL pointer */
bool json_is_string(const json *v);
bool json_is_number(const json *v);
bool json_is_object(const json *v);
bool json_is_array(const json *v);
bool json_is_bool(const json *v);

/* Elements of an array or members of an object; 0 for anything else. */
size_t json_len(const json *v);
/* Object member by key, or NULL. */
json *json_get(const json *obj, const char *key);
/* Array element i, or the i-th object member's value; NULL if out of range. */
json *json_at(const json *v, size_t i);
/* The key of the i-th member of an object, or NULL. */
const char *json_key_at(const json *obj, size_t i);

/* Iteration without indexes: for (json *c = json_first(v); c; c = json_next(c)) ...
 * json_key(c) is the member's key when v is an object. */
json *json_first(const json *v);
json *json_next(const json *child);
const char *json_key(const json *child);

/* RFC 6901 JSON Pointer: "" is the root, "/metadata/name", "/spec/containers/0/image";
 * "~1" stands for '/', "~0" for '~' ("/metadata/labels/kubernetes.io~1hostname"). */
json *json_pointer(const json *root, const char *pointer);

/* Walks object keys given as separate arguments, ending with NULL (no escaping needed):
 * json_path(pod, "metadata", "labels", "kubernetes.io/hostname", NULL). A key that is all
 * digits indexes an array. */
json *json_path(const json *root, ...);

/* Scalars. The string accessors return NULL when v is not a string. */
const char *json_string(const json *v);
size_t json_string_len(const json *v);
bool json_bool(const json *v, bool dflt);     /* dflt unless v is a bool */
double json_double(const json *v, double dflt);
/* The integer value when v is a number with an exact integer value in int64 range. */
bool json_int(const json *v, int64_t *out);

/* Shorthands over json_pointer: the string / bool / int at `pointer`, or the default. */
const char *json_pstr(const json *root, const char *pointer, const char *dflt);
bool json_pbool(const json *root, const char *pointer, bool dflt);
int64_t json_pint(const json *root, const char *pointer, int64_t dflt);

/* ---- strings -------------------------------------------------------------------------- */

/* A growable byte buffer (used by the serializer; handy for building paths and messages). */
typedef struct {
    char *data; /* NUL-terminated when not NULL */
    size_t len;
    size_t cap;
    bool oom;   /* an allocation failed: contents are incomplete */
} json_buf;

void json_buf_append(json_buf *b, const char *s, size_t n);
void json_buf_puts(json_buf *b, const char *s);
void json_buf_printf(json_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s (n bytes) as a quoted, escaped JSON string. */
void json_buf_quote(json_buf *b, const char *s, size_t n);
/* Appends the compact JSON text of v. */
void json_buf_value(json_buf *b, const json *v);
/* Hands over the data (the caller frees it; "" if nothing was appended) and resets b. */
char *json_buf_take(json_buf *b);
void json_buf_free(json_buf *b);

#ifdef __cplusplus
}
#endif

#endif
