/* Unit tests of sdk/json.c, run natively:  guest-examples/c/build.sh --test  (or `make -C
 * guest-examples/c test`). Exit status 0 when every check passes. */
#include "../sdk/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Parses `in`, serializes it, and compares with `want` (NULL: must fail to parse). */
static void roundtrip(const char *in, const char *want) {
    char err[128];
    json *v = json_parse(in, strlen(in), err, sizeof err);
    checks++;
    if (!want) {
        if (v) {
            failures++;
            char *s = json_serialize(v, NULL);
            fprintf(stderr, "parse of %s should fail, got %s\n", in, s);
            free(s);
        } else if (!err[0]) {
            failures++;
            fprintf(stderr, "parse of %s failed without a message\n", in);
        }
        json_free(v);
        return;
    }
    if (!v) {
        failures++;
        fprintf(stderr, "parse of %s failed: %s\n", in, err);
        return;
    }
    size_t n;
    char *s = json_serialize(v, &n);
    if (strlen(want) != n || memcmp(s, want, n) != 0) {
        failures++;
        fprintf(stderr, "%s -> %s, want %s\n", in, s, want);
    }
    /* and the output parses back to an equal tree */
    json *again = json_parse(s, n, NULL, 0);
    CHECK(again && json_equal(v, again));
    json_free(again);
    free(s);
    json_free(v);
}

static void test_literals_and_structure(void) {
    roundtrip("null", "null");
    roundtrip(" true ", "true");
    roundtrip("\tfalse\r\n", "false");
    roundtrip("{}", "{}");
    roundtrip("[]", "[]");
    roundtrip("{ \"a\" : [1, 2, {\"b\": null}], \"c\": \"d\" }", "{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}");
    roundtrip("[[[]]]", "[[[]]]");
    roundtrip("{\"a\":1,\"a\":2}", "{\"a\":2}"); /* last key wins */
    roundtrip("", NULL);
    roundtrip("   ", NULL);
    roundtrip("nul", NULL);
    roundtrip("True", NULL);
    roundtrip("[1,]", NULL);
    roundtrip("[1 2]", NULL);
    roundtrip("{\"a\":1,}", NULL);
    roundtrip("{\"a\" 1}", NULL);
    roundtrip("{a:1}", NULL);
    roundtrip("{\"a\":1", NULL);
    roundtrip("[", NULL);
    roundtrip("1 2", NULL);
    roundtrip("{} x", NULL);
    roundtrip("'a'", NULL);
}

static void test_numbers(void) {
    roundtrip("0", "0");
    roundtrip("-0", "0"); /* an integer zero */
    roundtrip("-0.0", "-0");
    roundtrip("42", "42");
    roundtrip("-17", "-17");
    roundtrip("9223372036854775807", "9223372036854775807");
    roundtrip("-9223372036854775808", "-9223372036854775808");
    roundtrip("9223372036854775808", "9223372036854775808"); /* 2^63 as a double prints exactly */
    roundtrip("18446744073709551616", "18446744073709551616");
    roundtrip("0.1", "0.1");
    roundtrip("1.5", "1.5");
    roundtrip("1.0", "1");
    roundtrip("-2.5e-7", "-2.5e-07");
    roundtrip("1E3", "1000");
    roundtrip("1e+300", "1e+300");
    roundtrip("123456789.123456789", "123456789.12345679");
    roundtrip("0.30000000000000004", "0.30000000000000004");
    roundtrip("5e-324", "5e-324");
    roundtrip("1e21", "1e+21");
    roundtrip("-1e20", "-100000000000000000000");
    roundtrip("01", NULL);
    roundtrip("-", NULL);
    roundtrip("+1", NULL);
    roundtrip("1.", NULL);
    roundtrip(".5", NULL);
    roundtrip("1e", NULL);
    roundtrip("1e+", NULL);
    roundtrip("0x10", NULL);
    roundtrip("NaN", NULL);
    roundtrip("1e400", NULL);
    roundtrip("-1e400", NULL);
    roundtrip("1e-400", "0");
    roundtrip("Infinity", NULL);

    json *v = json_parse_str("[9007199254740993, 1.25, 3.0, 1e19, -1]");
    int64_t i;
    CHECK(json_int(json_at(v, 0), &i) && i == 9007199254740993LL); /* beyond 2^53: still exact */
    CHECK(!json_int(json_at(v, 1), &i));
    CHECK(json_double(json_at(v, 1), 0) == 1.25);
    CHECK(json_int(json_at(v, 2), &i) && i == 3);
    CHECK(!json_int(json_at(v, 3), &i)); /* out of int64 range */
    CHECK(json_int(json_at(v, 4), &i) && i == -1);
    CHECK(json_double(json_at(v, 4), 0) == -1.0);
    json_free(v);

    json *d = json_new_double(NAN);
    char *s = json_serialize(d, NULL);
    CHECK(strcmp(s, "null") == 0);
    free(s);
    json_free(d);
}

static void test_strings(void) {
    roundtrip("\"\"", "\"\"");
    roundtrip("\"plain\"", "\"plain\"");
    roundtrip("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", "\"\\\" \\\\ / \\b \\f \\n \\r \\t\"");
    roundtrip("\"\\u0041\\u00e9\\u20AC\"", "\"A\xc3\xa9\xe2\x82\xac\"");            /* A é € */
    roundtrip("\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"");                          /* 😀 */
    roundtrip("\"\\uD834\\uDD1E\"", "\"\xf0\x9d\x84\x9e\"");                          /* 𝄞 */
    roundtrip("\"\\ud83d\"", "\"\xef\xbf\xbd\"");                                     /* lone high */
    roundtrip("\"\\ude00x\"", "\"\xef\xbf\xbdx\"");                                   /* lone low */
    roundtrip("\"\\ud83d\\u0041\"", "\"\xef\xbf\xbd" "A\"");                          /* high + non-low */
    roundtrip("\"\\u0001\\u001f\"", "\"\\u0001\\u001f\"");
    roundtrip("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    roundtrip("\"\x7f\"", "\"\x7f\"");
    roundtrip("\"a\nb\"", NULL);       /* raw control character */
    roundtrip("\"abc", NULL);          /* unterminated */
    roundtrip("\"\\x41\"", NULL);      /* unknown escape */
    roundtrip("\"\\u12\"", NULL);      /* short \u */
    roundtrip("\"\\u12G4\"", NULL);    /* not hex */
    roundtrip("\"\xc3\"", NULL);       /* truncated UTF-8 */
    roundtrip("\"\xc0\xaf\"", NULL);   /* overlong */
    roundtrip("\"\xed\xa0\x80\"", NULL); /* encoded surrogate */
    roundtrip("\"\xf4\x90\x80\x80\"", NULL); /* > U+10FFFF */
    roundtrip("\"\xff\"", NULL);

    /* embedded NUL survives with its length */
    json *v = json_parse_str("\"a\\u0000b\"");
    CHECK(v && json_string_len(v) == 3 && memcmp(json_string(v), "a\0b", 3) == 0);
    char *s = json_serialize(v, NULL);
    CHECK(strcmp(s, "\"a\\u0000b\"") == 0);
    free(s);
    json_free(v);
    /* but not in a key */
    CHECK(json_parse_str("{\"a\\u0000\":1}") == NULL);
    /* escaped keys */
    v = json_parse_str("{\"k\\u00e9y\\n\":1}");
    CHECK(json_get(v, "k\xc3\xa9y\n") != NULL);
    s = json_serialize(v, NULL);
    CHECK(strcmp(s, "{\"k\xc3\xa9y\\n\":1}") == 0);
    free(s);
    json_free(v);
}

static void test_errors(void) {
    char err[128];
    json *v = json_parse("{\n  \"a\": tru\n}", 14, err, sizeof err);
    CHECK(v == NULL);
    CHECK(strstr(err, "line 2") != NULL);
    /* not NUL-terminated input: only len bytes are read */
    const char text[] = {'[', '1', ']', 'x'};
    v = json_parse(text, 3, err, sizeof err);
    CHECK(v && json_len(v) == 1);
    json_free(v);
    /* depth limit */
    char deep[2000];
    memset(deep, '[', 1000);
    memset(deep + 1000, ']', 1000);
    CHECK(json_parse(deep, sizeof deep, err, sizeof err) == NULL && strstr(err, "deep"));
    v = json_parse(deep + 488, 1024, NULL, 0); /* 512 levels: the limit, fine */
    CHECK(v != NULL);
    json_free(v);
    CHECK(json_parse(deep + 487, 1026, NULL, 0) == NULL); /* 513 */
    v = json_parse(deep + 600, 800, NULL, 0);
    CHECK(v != NULL);
    json_free(v);
}

static void test_lookup(void) {
    json *pod = json_parse_str(
        "{\"metadata\":{\"name\":\"web\",\"labels\":{\"kubernetes.io/hostname\":\"n1\",\"a~b\":\"t\"},"
        "\"finalizers\":[\"x\",\"y\"]},"
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"},{\"name\":\"d\"}]},"
        "\"status\":{\"ready\":true,\"restarts\":3}}");
    CHECK(pod);
    CHECK(strcmp(json_pstr(pod, "/metadata/name", ""), "web") == 0);
    CHECK(strcmp(json_pstr(pod, "/metadata/labels/kubernetes.io~1hostname", ""), "n1") == 0);
    CHECK(strcmp(json_pstr(pod, "/metadata/labels/a~0b", ""), "t") == 0);
    CHECK(strcmp(json_pstr(pod, "/spec/containers/0/image", ""), "nginx") == 0);
    CHECK(strcmp(json_pstr(pod, "/spec/containers/1/image", "none"), "none") == 0);
    CHECK(json_pointer(pod, "/spec/containers/2") == NULL);
    CHECK(json_pointer(pod, "/spec/containers/01") == NULL);
    CHECK(json_pointer(pod, "/spec/containers/-1") == NULL);
    CHECK(json_pointer(pod, "") == pod);
    CHECK(json_pointer(pod, "metadata") == NULL);
    CHECK(json_pbool(pod, "/status/ready", false));
    CHECK(json_pint(pod, "/status/restarts", -1) == 3);
    CHECK(json_pint(pod, "/status/nope", -1) == -1);
    CHECK(strcmp(json_string(json_path(pod, "metadata", "labels", "kubernetes.io/hostname", NULL)), "n1") == 0);
    CHECK(strcmp(json_string(json_path(pod, "spec", "containers", "1", "name", NULL)), "d") == 0);
    CHECK(json_path(pod, "spec", "nope", "x", NULL) == NULL);
    CHECK(json_len(json_pointer(pod, "/metadata/finalizers")) == 2);
    CHECK(json_len(pod) == 3);
    CHECK(strcmp(json_key_at(pod, 1), "spec") == 0);
    int n = 0;
    for (json *c = json_first(json_get(pod, "metadata")); c; c = json_next(c)) n++;
    CHECK(n == 3);
    CHECK(strcmp(json_key(json_first(pod)), "metadata") == 0);
    CHECK(json_get(json_at(pod, 0), "name") != NULL); /* json_at on an object: i-th member */
    CHECK(json_typeof(NULL) == JSON_NULL && json_is_null(NULL));
    CHECK(json_string(json_get(pod, "metadata")) == NULL);
    json_free(pod);
}

static void test_building(void) {
    json *o = json_new_object();
    json_set_str(o, "name", "a \"quoted\" name\n");
    json_set_int(o, "n", -5);
    json_set_bool(o, "ok", true);
    json *arr = json_set(o, "list", json_new_array());
    json_push(arr, json_new_string("x"));
    json_push(arr, json_new_double(0.5));
    json_push(arr, json_new_null());
    json_set_object(json_set_object(o, "meta"), "labels");
    json_set_str(json_pointer(o, "/meta/labels"), "k", "v");
    json_set_int(o, "n", 7); /* replaces, keeps position */
    char *s = json_serialize(o, NULL);
    CHECK(strcmp(s, "{\"name\":\"a \\\"quoted\\\" name\\n\",\"n\":7,\"ok\":true,\"list\":[\"x\",0.5,null],"
                    "\"meta\":{\"labels\":{\"k\":\"v\"}}}") == 0);
    free(s);

    CHECK(json_remove(o, "ok"));
    CHECK(!json_remove(o, "ok"));
    json *list = json_take(o, "list");
    CHECK(list && json_len(list) == 3 && json_get(o, "list") == NULL);
    json *x = json_take_at(list, 0);
    CHECK(strcmp(json_string(x), "x") == 0 && json_len(list) == 2);
    json_free(x);
    x = json_take_at(list, 1); /* the tail */
    CHECK(json_is_null(x) && json_len(list) == 1);
    json_free(x);
    json_push(list, json_new_int(1)); /* tail pointer still right */
    s = json_serialize(list, NULL);
    CHECK(strcmp(s, "[0.5,1]") == 0);
    free(s);
    json_free(list);
    json_set_int(o, "last", 1); /* tail pointer after the removals */
    s = json_serialize(o, NULL);
    CHECK(strcmp(s, "{\"name\":\"a \\\"quoted\\\" name\\n\",\"n\":7,\"meta\":{\"labels\":{\"k\":\"v\"}},\"last\":1}") == 0);
    free(s);

    json *copy = json_dup(o);
    CHECK(json_equal(o, copy));
    json_set_int(copy, "n", 8);
    CHECK(!json_equal(o, copy));
    json_free(copy);

    json *a = json_parse_str("{\"a\":1,\"b\":[1,2]}");
    json *b = json_parse_str("{\"b\":[1,2.0],\"a\":1}");
    json *c = json_parse_str("{\"b\":[2,1],\"a\":1}");
    CHECK(json_equal(a, b) && !json_equal(a, c));
    json_free(a);
    json_free(b);
    json_free(c);

    /* not an object / array: the value is freed, NULL returned */
    CHECK(json_set(arr = json_new_array(), "k", json_new_int(1)) == NULL);
    CHECK(json_push(o, json_new_int(1)) == NULL);
    json_free(arr);
    json_free(o);

    json *sf = json_new_stringf("pod-%d-%s", 3, "x");
    CHECK(strcmp(json_string(sf), "pod-3-x") == 0);
    json_free(sf);
}

static void test_build_template(void) {
    json *labels = json_parse_str("{\"app\":\"web\"}");
    json *v = json_build("{\"name\":%s,\"n\":%d,\"big\":%l,\"u\":%u,\"f\":%g,\"ok\":%b,\"labels\":%j,"
                         "\"arr\":%J,\"none\":%s,\"pct\":\"100%\",%s:1,\"lit\":\"%s\"}",
                         "we\"ird\\", -3, (int64_t)1 << 40, 7u, 0.25, 1, labels, json_new_array(),
                         (const char *)NULL, "dyn-key");
    CHECK(v != NULL);
    char *s = json_serialize(v, NULL);
    CHECK(strcmp(s, "{\"name\":\"we\\\"ird\\\\\",\"n\":-3,\"big\":1099511627776,\"u\":7,\"f\":0.25,\"ok\":true,"
                    "\"labels\":{\"app\":\"web\"},\"arr\":[],\"none\":null,\"pct\":\"100%\",\"dyn-key\":1,"
                    "\"lit\":\"%s\"}") == 0);
    if (strcmp(s, "") == 0) fprintf(stderr, "%s\n", s);
    free(s);
    json_free(v);
    json_free(labels);
    CHECK(json_build("{\"a\":%s", "x") == NULL); /* invalid result */
    CHECK(json_build("[%q]") == NULL);           /* unknown placeholder */
}

static void test_buf(void) {
    json_buf b = {0};
    for (int i = 0; i < 1000; i++) json_buf_printf(&b, "%d,", i);
    CHECK(b.len > 1000 && b.data[b.len] == 0);
    json_buf_printf(&b, "%s", "a very long string that does not fit into the small stack buffer of the printf "
                              "helper, so that it takes the second vsnprintf path with the reserved space.");
    CHECK(strstr(b.data, "reserved space.") != NULL);
    char *d = json_buf_take(&b);
    CHECK(b.data == NULL && b.len == 0);
    free(d);
    d = json_buf_take(&b);
    CHECK(d && d[0] == 0);
    free(d);
}

/* Random mutations of valid documents (deterministic): whatever parses must serialize and parse
 * back to an equal tree; under ASan this also checks that malformed input is read safely. */
static void test_mutations(void) {
    static const char *seeds[] = {
        "{\"a\":[1,-2.5e3,true,false,null],\"b\":{\"c\":\"d\\u00e9\\ud83d\\ude00\\n\"}}",
        "[\"x\",{\"y\":[[],{}]},0.125,9223372036854775807,\"\xc3\xa9\xf0\x9f\x98\x80\"]",
        "{\"metadata\":{\"name\":\"web\",\"labels\":{\"k\":\"v\"}},\"spec\":{\"n\":1e-7}}",
    };
    static const char alphabet[] = "{}[],:\"\\/0123456789.-+eEtrufalsn u\xc3\xa9\xed\xa0\x80\x01";
    uint32_t rng = 12345;
    char buf[256];
    int parsed = 0;
    for (int iter = 0; iter < 20000; iter++) {
        const char *seed = seeds[iter % 3];
        size_t n = strlen(seed);
        memcpy(buf, seed, n);
        int edits = 1 + (int)((rng = rng * 1103515245u + 12345u) >> 16) % 3;
        for (int e = 0; e < edits; e++) {
            rng = rng * 1103515245u + 12345u;
            size_t at = (rng >> 8) % (n + 1);
            char c = alphabet[(rng >> 20) % (sizeof alphabet - 1)];
            switch ((rng >> 4) % 3) {
            case 0: if (at < n) buf[at] = c; break;
            case 1: if (n < sizeof buf - 1) { memmove(buf + at + 1, buf + at, n - at); buf[at] = c; n++; } break;
            default: if (at < n) { memmove(buf + at, buf + at + 1, n - at - 1); n--; }
            }
        }
        /* exactly n bytes on the heap, so ASan sees any read past the end */
        char *heap = malloc(n ? n : 1);
        memcpy(heap, buf, n);
        json *v = json_parse(heap, n, NULL, 0);
        free(heap);
        if (!v) continue;
        parsed++;
        size_t len;
        char *out = json_serialize(v, &len);
        json *again = json_parse(out, len, NULL, 0);
        CHECK(again && json_equal(v, again));
        if (!again || !json_equal(v, again)) fprintf(stderr, "  input %.*s\n  output %s\n", (int)n, buf, out);
        json_free(again);
        free(out);
        json_free(v);
    }
    CHECK(parsed > 100);
}

int main(void) {
    test_literals_and_structure();
    test_numbers();
    test_strings();
    test_errors();
    test_lookup();
    test_building();
    test_build_template();
    test_buf();
    test_mutations();
    if (failures) {
        fprintf(stderr, "json_test: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("json_test: all %d checks passed\n", checks);
    return 0;
}
