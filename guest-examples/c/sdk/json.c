/* json.c - see json.h. Written for turtles; no third-party code. */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct json {
    json_type type;
    struct json *next; /* next sibling inside an array or object */
    char *key;         /* the member's key when inside an object */
    union {
        bool b;
        struct {
            bool is_int; /* i is exact; d == (double)i */
            int64_t i;
            double d;
        } num;
        struct {
            char *s; /* NUL-terminated */
            size_t n;
        } str;
        struct {
            struct json *head, *tail;
            size_t n;
        } kids;
    } u;
};

#define JSON_MAX_DEPTH 512

/* ---- buffer --------------------------------------------------------------------------- */

static bool buf_reserve(json_buf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *d = realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void json_buf_append(json_buf *b, const char *s, size_t n) {
    if (!buf_reserve(b, n)) return;
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void json_buf_puts(json_buf *b, const char *s) { json_buf_append(b, s, strlen(s)); }

static void buf_putc(json_buf *b, char c) {
    if (!buf_reserve(b, 1)) return;
    b->data[b->len++] = c;
    b->data[b->len] = 0;
}

static void buf_vprintf(json_buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    char small[128];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t)n < sizeof small) {
        json_buf_append(b, small, (size_t)n);
    } else if (buf_reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void json_buf_printf(json_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *json_buf_take(json_buf *b) {
    char *d = b->data;
    if (!d) d = calloc(1, 1);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = false;
    return d;
}

void json_buf_free(json_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

void json_buf_quote(json_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    buf_putc(b, '"');
    size_t run = 0; /* start of the current run of bytes that need no escaping */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        json_buf_append(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': json_buf_append(b, "\\\"", 2); break;
        case '\\': json_buf_append(b, "\\\\", 2); break;
        case '\b': json_buf_append(b, "\\b", 2); break;
        case '\f': json_buf_append(b, "\\f", 2); break;
        case '\n': json_buf_append(b, "\\n", 2); break;
        case '\r': json_buf_append(b, "\\r", 2); break;
        case '\t': json_buf_append(b, "\\t", 2); break;
        default: {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            json_buf_append(b, e, 6);
        }
        }
    }
    json_buf_append(b, s + run, n - run);
    buf_putc(b, '"');
}

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- nodes ---------------------------------------------------------------------------- */

static json *node(json_type t) {
    json *v = calloc(1, sizeof *v);
    if (v) v->type = t;
    return v;
}

json *json_new_null(void) { return node(JSON_NULL); }

json *json_new_bool(bool b) {
    json *v = node(JSON_BOOL);
    if (v) v->u.b = b;
    return v;
}

json *json_new_int(int64_t i) {
    json *v = node(JSON_NUMBER);
    if (v) {
        v->u.num.is_int = true;
        v->u.num.i = i;
        v->u.num.d = (double)i;
    }
    return v;
}

json *json_new_double(double d) {
    json *v = node(JSON_NUMBER);
    if (v) v->u.num.d = d;
    return v;
}

json *json_new_stringn(const char *s, size_t n) {
    json *v = node(JSON_STRING);
    if (!v) return NULL;
    v->u.str.s = malloc(n + 1);
    if (!v->u.str.s) {
        free(v);
        return NULL;
    }
    if (n) memcpy(v->u.str.s, s, n);
    v->u.str.s[n] = 0;
    v->u.str.n = n;
    return v;
}

json *json_new_string(const char *s) { return s ? json_new_stringn(s, strlen(s)) : json_new_null(); }

json *json_new_stringf(const char *fmt, ...) {
    json_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (b.oom) {
        json_buf_free(&b);
        return NULL;
    }
    json *v = node(JSON_STRING);
    if (!v) {
        json_buf_free(&b);
        return NULL;
    }
    v->u.str.n = b.len;
    v->u.str.s = json_buf_take(&b);
    return v;
}

json *json_new_array(void) { return node(JSON_ARRAY); }
json *json_new_object(void) { return node(JSON_OBJECT); }

void json_free(json *v) {
    if (!v) return;
    if (v->type == JSON_STRING) {
        free(v->u.str.s);
    } else if (v->type == JSON_ARRAY || v->type == JSON_OBJECT) {
        /* Siblings iteratively; recursion only as deep as the tree (at most 512 when parsed). */
        json *c = v->u.kids.head;
        while (c) {
            json *n = c->next;
            json_free(c);
            c = n;
        }
    }
    free(v->key);
    free(v);
}

static void append_child(json *parent, json *c) {
    c->next = NULL;
    if (parent->u.kids.tail)
        parent->u.kids.tail->next = c;
    else
        parent->u.kids.head = c;
    parent->u.kids.tail = c;
    parent->u.kids.n++;
}

json *json_push(json *arr, json *v) {
    if (!v) return NULL;
    if (!arr || arr->type != JSON_ARRAY) {
        json_free(v);
        return NULL;
    }
    free(v->key);
    v->key = NULL;
    append_child(arr, v);
    return v;
}

/* Sets obj[key] = v, taking ownership of both v and the malloc'ed key `k`. */
static json *set_owned_key(json *obj, char *k, json *v) {
    json *prev = NULL;
    for (json *c = obj->u.kids.head; c; prev = c, c = c->next) {
        if (strcmp(c->key, k) == 0) {
            free(v->key);
            v->key = k;
            v->next = c->next;
            if (prev)
                prev->next = v;
            else
                obj->u.kids.head = v;
            if (obj->u.kids.tail == c) obj->u.kids.tail = v;
            c->next = NULL;
            json_free(c);
            return v;
        }
    }
    free(v->key);
    v->key = k;
    append_child(obj, v);
    return v;
}

json *json_set(json *obj, const char *key, json *v) {
    if (!v) return NULL;
    char *k = key ? dupstr(key) : NULL;
    if (!obj || obj->type != JSON_OBJECT || !k) {
        free(k);
        json_free(v);
        return NULL;
    }
    return set_owned_key(obj, k, v);
}

json *json_set_str(json *obj, const char *key, const char *s) { return json_set(obj, key, json_new_string(s)); }
json *json_set_int(json *obj, const char *key, int64_t i) { return json_set(obj, key, json_new_int(i)); }
json *json_set_bool(json *obj, const char *key, bool b) { return json_set(obj, key, json_new_bool(b)); }

json *json_set_object(json *obj, const char *key) {
    json *c = json_get(obj, key);
    if (c && c->type == JSON_OBJECT) return c;
    return json_set(obj, key, json_new_object());
}

static json *unlink_where(json *parent, const char *key, size_t index) {
    json *prev = NULL;
    size_t i = 0;
    for (json *c = parent->u.kids.head; c; prev = c, c = c->next, i++) {
        if (key ? strcmp(c->key, key) == 0 : i == index) {
            if (prev)
                prev->next = c->next;
            else
                parent->u.kids.head = c->next;
            if (parent->u.kids.tail == c) parent->u.kids.tail = prev;
            parent->u.kids.n--;
            c->next = NULL;
            free(c->key);
            c->key = NULL;
            return c;
        }
    }
    return NULL;
}

json *json_take(json *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT || !key) return NULL;
    return unlink_where(obj, key, 0);
}

json *json_take_at(json *arr, size_t i) {
    if (!arr || arr->type != JSON_ARRAY) return NULL;
    return unlink_where(arr, NULL, i);
}

bool json_remove(json *obj, const char *key) {
    json *c = json_take(obj, key);
    json_free(c);
    return c != NULL;
}

json *json_dup(const json *v) {
    if (!v) return NULL;
    switch (v->type) {
    case JSON_NULL: return json_new_null();
    case JSON_BOOL: return json_new_bool(v->u.b);
    case JSON_NUMBER: {
        json *n = node(JSON_NUMBER);
        if (n) n->u.num = v->u.num;
        return n;
    }
    case JSON_STRING: return json_new_stringn(v->u.str.s, v->u.str.n);
    case JSON_ARRAY:
    case JSON_OBJECT: {
        json *n = node(v->type);
        if (!n) return NULL;
        for (json *c = v->u.kids.head; c; c = c->next) {
            json *d = json_dup(c);
            char *k = NULL;
            if (!d || (c->key && !(k = dupstr(c->key)))) {
                json_free(d);
                json_free(n);
                return NULL;
            }
            d->key = k;
            append_child(n, d);
        }
        return n;
    }
    }
    return NULL;
}

bool json_equal(const json *a, const json *b) {
    if (!a || !b) return a == b;
    if (a->type != b->type) return false;
    switch (a->type) {
    case JSON_NULL: return true;
    case JSON_BOOL: return a->u.b == b->u.b;
    case JSON_NUMBER:
        if (a->u.num.is_int && b->u.num.is_int) return a->u.num.i == b->u.num.i;
        return a->u.num.d == b->u.num.d;
    case JSON_STRING: return a->u.str.n == b->u.str.n && memcmp(a->u.str.s, b->u.str.s, a->u.str.n) == 0;
    case JSON_ARRAY: {
        if (a->u.kids.n != b->u.kids.n) return false;
        const json *x = a->u.kids.head, *y = b->u.kids.head;
        for (; x && y; x = x->next, y = y->next)
            if (!json_equal(x, y)) return false;
        return true;
    }
    case JSON_OBJECT:
        if (a->u.kids.n != b->u.kids.n) return false;
        for (const json *x = a->u.kids.head; x; x = x->next)
            if (!json_equal(x, json_get(b, x->key))) return false;
        return true;
    }
    return false;
}

/* ---- inspecting ----------------------------------------------------------------------- */

json_type json_typeof(const json *v) { return v ? v->type : JSON_NULL; }
bool json_is_null(const json *v) { return !v || v->type == JSON_NULL; }
bool json_is_string(const json *v) { return v && v->type == JSON_STRING; }
bool json_is_number(const json *v) { return v && v->type == JSON_NUMBER; }
bool json_is_object(const json *v) { return v && v->type == JSON_OBJECT; }
bool json_is_array(const json *v) { return v && v->type == JSON_ARRAY; }
bool json_is_bool(const json *v) { return v && v->type == JSON_BOOL; }

size_t json_len(const json *v) {
    return v && (v->type == JSON_ARRAY || v->type == JSON_OBJECT) ? v->u.kids.n : 0;
}

json *json_get(const json *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT || !key) return NULL;
    for (json *c = obj->u.kids.head; c; c = c->next)
        if (strcmp(c->key, key) == 0) return c;
    return NULL;
}

json *json_at(const json *v, size_t i) {
    if (!v || (v->type != JSON_ARRAY && v->type != JSON_OBJECT) || i >= v->u.kids.n) return NULL;
    json *c = v->u.kids.head;
    while (i-- && c) c = c->next;
    return c;
}

const char *json_key_at(const json *obj, size_t i) {
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    json *c = json_at(obj, i);
    return c ? c->key : NULL;
}

json *json_first(const json *v) {
    return v && (v->type == JSON_ARRAY || v->type == JSON_OBJECT) ? v->u.kids.head : NULL;
}
json *json_next(const json *child) { return child ? child->next : NULL; }
const char *json_key(const json *child) { return child ? child->key : NULL; }

/* An array index: digits only, no leading zero (except "0"), fits size_t. */
static bool parse_index(const char *s, size_t n, size_t *out) {
    if (n == 0 || (n > 1 && s[0] == '0')) return false;
    size_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        if (v > (SIZE_MAX - 9) / 10) return false;
        v = v * 10 + (size_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* One step down: member `seg` of an object or element `seg` of an array. seg is n bytes. */
static json *step(const json *v, const char *seg, size_t n) {
    if (!v) return NULL;
    if (v->type == JSON_OBJECT) {
        for (json *c = v->u.kids.head; c; c = c->next)
            if (strlen(c->key) == n && memcmp(c->key, seg, n) == 0) return c;
        return NULL;
    }
    if (v->type == JSON_ARRAY) {
        size_t i;
        return parse_index(seg, n, &i) ? json_at(v, i) : NULL;
    }
    return NULL;
}

json *json_pointer(const json *root, const char *pointer) {
    if (!root || !pointer) return NULL;
    if (!*pointer) return (json *)root;
    if (*pointer != '/') return NULL;
    const json *cur = root;
    char small[128];
    const char *p = pointer;
    while (*p == '/' && cur) {
        p++;
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *seg = n < sizeof small ? small : malloc(n + 1);
        if (!seg) return NULL;
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
                seg[m++] = p[i + 1] == '0' ? '~' : '/';
                i++;
            } else {
                seg[m++] = p[i];
            }
        }
        cur = step(cur, seg, m);
        if (seg != small) free(seg);
        p += n;
    }
    return (json *)cur;
}

json *json_path(const json *root, ...) {
    va_list ap;
    va_start(ap, root);
    const json *cur = root;
    const char *k;
    while (cur && (k = va_arg(ap, const char *)) != NULL) cur = step(cur, k, strlen(k));
    va_end(ap);
    return (json *)cur;
}

const char *json_string(const json *v) { return v && v->type == JSON_STRING ? v->u.str.s : NULL; }
size_t json_string_len(const json *v) { return v && v->type == JSON_STRING ? v->u.str.n : 0; }
bool json_bool(const json *v, bool dflt) { return v && v->type == JSON_BOOL ? v->u.b : dflt; }
double json_double(const json *v, double dflt) { return v && v->type == JSON_NUMBER ? v->u.num.d : dflt; }

bool json_int(const json *v, int64_t *out) {
    if (!v || v->type != JSON_NUMBER) return false;
    if (v->u.num.is_int) {
        *out = v->u.num.i;
        return true;
    }
    double d = v->u.num.d;
    /* [-2^63, 2^63) with no fractional part */
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && floor(d) == d) {
        *out = (int64_t)d;
        return true;
    }
    return false;
}

const char *json_pstr(const json *root, const char *pointer, const char *dflt) {
    const char *s = json_string(json_pointer(root, pointer));
    return s ? s : dflt;
}

bool json_pbool(const json *root, const char *pointer, bool dflt) {
    return json_bool(json_pointer(root, pointer), dflt);
}

int64_t json_pint(const json *root, const char *pointer, int64_t dflt) {
    int64_t i;
    return json_int(json_pointer(root, pointer), &i) ? i : dflt;
}

/* ---- serializing ---------------------------------------------------------------------- */

static void write_double(json_buf *b, double d) {
    if (isnan(d) || isinf(d)) {
        json_buf_append(b, "null", 4);
        return;
    }
    char tmp[40];
    if (floor(d) == d && fabs(d) < 1e21) {
        /* An integral value: all its digits (exact, and what JavaScript prints). */
        snprintf(tmp, sizeof tmp, "%.0f", d);
    } else {
        /* The shortest %.Ng that reads back as the same double. */
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(tmp, sizeof tmp, "%.*g", prec, d);
            if (strtod(tmp, NULL) == d) break;
        }
    }
    json_buf_puts(b, tmp);
}

void json_buf_value(json_buf *b, const json *v) {
    if (!v) {
        json_buf_append(b, "null", 4);
        return;
    }
    switch (v->type) {
    case JSON_NULL: json_buf_append(b, "null", 4); break;
    case JSON_BOOL: json_buf_puts(b, v->u.b ? "true" : "false"); break;
    case JSON_NUMBER:
        if (v->u.num.is_int)
            json_buf_printf(b, "%lld", (long long)v->u.num.i);
        else
            write_double(b, v->u.num.d);
        break;
    case JSON_STRING: json_buf_quote(b, v->u.str.s, v->u.str.n); break;
    case JSON_ARRAY:
    case JSON_OBJECT: {
        bool obj = v->type == JSON_OBJECT;
        buf_putc(b, obj ? '{' : '[');
        for (const json *c = v->u.kids.head; c; c = c->next) {
            if (c != v->u.kids.head) buf_putc(b, ',');
            if (obj) {
                json_buf_quote(b, c->key, strlen(c->key));
                buf_putc(b, ':');
            }
            json_buf_value(b, c);
        }
        buf_putc(b, obj ? '}' : ']');
        break;
    }
    }
}

char *json_serialize(const json *v, size_t *len) {
    json_buf b = {0};
    json_buf_value(&b, v);
    if (b.oom) {
        json_buf_free(&b);
        return NULL;
    }
    if (len) *len = b.len;
    return json_buf_take(&b);
}

/* ---- parsing -------------------------------------------------------------------------- */

typedef struct {
    const char *start, *p, *end;
    int depth;
    char *err;
    size_t errlen;
    bool failed;
} parser;

static void fail(parser *ps, const char *msg) {
    if (ps->failed) return;
    ps->failed = true;
    if (!ps->err || !ps->errlen) return;
    int line = 1, col = 1;
    for (const char *q = ps->start; q < ps->p && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(ps->err, ps->errlen, "line %d column %d: %s", line, col, msg);
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p (bounds checked by the caller); -1 if not hex. */
static long hex4(const char *p) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

static void put_utf8(json_buf *b, unsigned long cp) {
    char o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        o[0] = (char)(0xF0 | (cp >> 18));
        o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    json_buf_append(b, o, n);
}

/* Length of the valid UTF-8 sequence at p (at most `avail` bytes), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t avail) {
    unsigned char c = p[0];
    size_t n;
    unsigned long cp, min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (avail < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

/* Parses a string at ps->p (which is at the opening quote) into out. */
static bool parse_string(parser *ps, json_buf *out) {
    ps->p++; /* opening quote */
    for (;;) {
        const char *run = ps->p;
        while (ps->p < ps->end) {
            unsigned char c = (unsigned char)*ps->p;
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
            ps->p++;
        }
        json_buf_append(out, run, (size_t)(ps->p - run));
        if (ps->p >= ps->end) {
            fail(ps, "unterminated string");
            return false;
        }
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            return !out->oom || (fail(ps, "out of memory"), false);
        }
        if (c < 0x20) {
            fail(ps, "control character in string");
            return false;
        }
        if (c >= 0x80) {
            size_t n = utf8_seq((const unsigned char *)ps->p, (size_t)(ps->end - ps->p));
            if (!n) {
                fail(ps, "invalid UTF-8 in string");
                return false;
            }
            json_buf_append(out, ps->p, n);
            ps->p += n;
            continue;
        }
        /* backslash */
        if (ps->end - ps->p < 2) {
            fail(ps, "unterminated string");
            return false;
        }
        char e = ps->p[1];
        ps->p += 2;
        switch (e) {
        case '"': buf_putc(out, '"'); break;
        case '\\': buf_putc(out, '\\'); break;
        case '/': buf_putc(out, '/'); break;
        case 'b': buf_putc(out, '\b'); break;
        case 'f': buf_putc(out, '\f'); break;
        case 'n': buf_putc(out, '\n'); break;
        case 'r': buf_putc(out, '\r'); break;
        case 't': buf_putc(out, '\t'); break;
        case 'u': {
            long cp = ps->end - ps->p >= 4 ? hex4(ps->p) : -1;
            if (cp < 0) {
                fail(ps, "invalid \\u escape");
                return false;
            }
            ps->p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                /* A high surrogate: combine with a following \uDC00-\uDFFF. */
                long lo = -1;
                if (ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') lo = hex4(ps->p + 2);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    ps->p += 6;
                } else {
                    cp = 0xFFFD;
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = 0xFFFD; /* a lone low surrogate */
            }
            put_utf8(out, (unsigned long)cp);
            break;
        }
        default:
            ps->p -= 1;
            fail(ps, "invalid escape in string");
            return false;
        }
    }
}

static json *parse_number(parser *ps) {
    const char *s = ps->p, *q = ps->p;
    bool integral = true;
    if (q < ps->end && *q == '-') q++;
    if (q >= ps->end) goto bad;
    if (*q == '0') {
        q++;
    } else if (*q >= '1' && *q <= '9') {
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    } else {
        goto bad;
    }
    if (q < ps->end && *q == '.') {
        integral = false;
        q++;
        if (q >= ps->end || *q < '0' || *q > '9') goto bad;
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        integral = false;
        q++;
        if (q < ps->end && (*q == '+' || *q == '-')) q++;
        if (q >= ps->end || *q < '0' || *q > '9') goto bad;
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    }
    ps->p = q;
    size_t n = (size_t)(q - s);
    if (integral) {
        /* Exact int64 when it fits (accumulate negatively: -2^63 is representable). */
        bool neg = *s == '-';
        int64_t v = 0;
        bool fits = true;
        for (const char *d = s + neg; d < q; d++) {
            int digit = *d - '0';
            if (v < (INT64_MIN + digit) / 10) {
                fits = false;
                break;
            }
            v = v * 10 - digit;
        }
        if (fits && (neg || v != INT64_MIN)) return json_new_int(neg ? v : -v);
    }
    char small[64];
    char *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp) {
        fail(ps, "out of memory");
        return NULL;
    }
    memcpy(tmp, s, n);
    tmp[n] = 0;
    double d = strtod(tmp, NULL);
    if (tmp != small) free(tmp);
    if (isinf(d)) {
        fail(ps, "number out of range"); /* as serde_json and Go's encoding/json do */
        return NULL;
    }
    json *v = json_new_double(d);
    if (!v) fail(ps, "out of memory");
    return v;
bad:
    ps->p = q;
    fail(ps, "invalid number");
    return NULL;
}

static bool literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, word, n) == 0) {
        ps->p += n;
        return true;
    }
    fail(ps, "invalid literal");
    return false;
}

static json *parse_value(parser *ps);

static json *parse_container(parser *ps, bool obj) {
    if (++ps->depth > JSON_MAX_DEPTH) {
        fail(ps, "nesting too deep");
        return NULL;
    }
    ps->p++; /* '{' or '[' */
    json *v = node(obj ? JSON_OBJECT : JSON_ARRAY);
    if (!v) {
        fail(ps, "out of memory");
        return NULL;
    }
    char close = obj ? '}' : ']';
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        ps->depth--;
        return v;
    }
    json_buf key = {0};
    for (;;) {
        skip_ws(ps);
        if (obj) {
            if (ps->p >= ps->end || *ps->p != '"') {
                fail(ps, "expected a string key");
                goto err;
            }
            if (!parse_string(ps, &key)) goto err;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                fail(ps, "expected ':'");
                goto err;
            }
            ps->p++;
        }
        json *c = parse_value(ps);
        if (!c) goto err;
        if (obj) {
            if (memchr(key.data ? key.data : "", 0, key.len)) {
                /* keys are C strings here: a key containing NUL cannot be looked up */
                json_free(c);
                fail(ps, "object key contains \\u0000");
                goto err;
            }
            set_owned_key(v, json_buf_take(&key), c);
        } else {
            append_child(v, c);
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            break;
        }
        fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        goto err;
    }
    json_buf_free(&key);
    ps->depth--;
    return v;
err:
    json_buf_free(&key);
    json_free(v);
    return NULL;
}

static json *parse_value(parser *ps) {
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end of input");
        return NULL;
    }
    json *v = NULL;
    switch (*ps->p) {
    case '{': return parse_container(ps, true);
    case '[': return parse_container(ps, false);
    case '"': {
        json_buf b = {0};
        if (!parse_string(ps, &b)) {
            json_buf_free(&b);
            return NULL;
        }
        v = node(JSON_STRING);
        if (!v) {
            json_buf_free(&b);
            fail(ps, "out of memory");
            return NULL;
        }
        v->u.str.n = b.len;
        v->u.str.s = json_buf_take(&b);
        return v;
    }
    case 't':
        if (literal(ps, "true")) v = json_new_bool(true);
        break;
    case 'f':
        if (literal(ps, "false")) v = json_new_bool(false);
        break;
    case 'n':
        if (literal(ps, "null")) v = json_new_null();
        break;
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) return parse_number(ps);
        fail(ps, "unexpected character");
        return NULL;
    }
    if (!v && !ps->failed) fail(ps, "out of memory");
    return v;
}

json *json_parse(const char *text, size_t len, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    parser ps = {text, text, text + len, 0, err, errlen, false};
    if (!text) {
        fail(&ps, "no input");
        return NULL;
    }
    json *v = parse_value(&ps);
    if (!v) return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        fail(&ps, "trailing characters after the value");
        json_free(v);
        return NULL;
    }
    return v;
}

json *json_parse_str(const char *text) { return text ? json_parse(text, strlen(text), NULL, 0) : NULL; }

/* ---- templates ------------------------------------------------------------------------ */

json *json_vbuild(const char *fmt, va_list ap) {
    json_buf b = {0};
    bool in_string = false, escaped = false;
    for (const char *p = fmt; *p; p++) {
        char c = *p;
        if (in_string) {
            buf_putc(&b, c);
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        if (c != '%') {
            buf_putc(&b, c);
            continue;
        }
        switch (*++p) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (s)
                json_buf_quote(&b, s, strlen(s));
            else
                json_buf_append(&b, "null", 4);
            break;
        }
        case 'd': json_buf_printf(&b, "%d", va_arg(ap, int)); break;
        case 'u': json_buf_printf(&b, "%u", va_arg(ap, unsigned int)); break;
        case 'l': json_buf_printf(&b, "%lld", (long long)va_arg(ap, int64_t)); break;
        case 'g': write_double(&b, va_arg(ap, double)); break;
        case 'b': json_buf_puts(&b, va_arg(ap, int) ? "true" : "false"); break;
        case 'j': json_buf_value(&b, va_arg(ap, const json *)); break;
        case 'J': {
            json *v = va_arg(ap, json *);
            json_buf_value(&b, v);
            json_free(v);
            break;
        }
        case '%': buf_putc(&b, '%'); break;
        default:
            /* Unknown placeholder: the remaining %J arguments cannot be known, so they leak;
             * this is a programming error, reported as NULL. */
            json_buf_free(&b);
            return NULL;
        }
    }
    if (b.oom) {
        json_buf_free(&b);
        return NULL;
    }
    json *v = json_parse(b.data ? b.data : "", b.len, NULL, 0);
    json_buf_free(&b);
    return v;
}

json *json_build(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    json *v = json_vbuild(fmt, ap);
    va_end(ap);
    return v;
}
