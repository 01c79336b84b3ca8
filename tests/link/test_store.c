/* test_store.c — the key-value store: set/get/add/check/delete, blocking get released by a
 * later set, timeouts that name the missing keys, bad addresses. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlink.h"

static int fails;
#define EXPECT(cond, ...) do { if (!(cond)) { fails++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static char addr[64];

static void *late_setter(void *arg) {
    (void)arg;
    tlink_store *s;
    if (tlink_store_connect(addr, 5, &s)) return NULL;
    usleep(100000);
    tlink_store_set(s, "late", "hello", 5);
    for (int i = 0; i < 50; i++) tlink_store_add(s, "counter", 2, NULL);
    tlink_store_close(s);
    return NULL;
}

int main(void) {
    tlink_store_server *srv;
    EXPECT(tlink_store_server_start("127.0.0.1", 0, &srv) == TLINK_OK, "server start");
    snprintf(addr, sizeof addr, "127.0.0.1:%d", tlink_store_server_port(srv));
    tlink_store *s;
    EXPECT(tlink_store_connect(addr, 5, &s) == TLINK_OK, "connect");
    EXPECT(tlink_store_set(s, "a", "xyz", 3) == TLINK_OK, "set");
    void *v = NULL;
    size_t len = 0;
    EXPECT(tlink_store_get(s, "a", &v, &len, 1) == TLINK_OK && len == 3 && !memcmp(v, "xyz", 3), "get");
    tlink_free(v);
    EXPECT(tlink_store_set(s, "a", "", 0) == TLINK_OK, "set empty");
    EXPECT(tlink_store_get(s, "a", &v, &len, 1) == TLINK_OK && len == 0, "get empty");
    tlink_free(v);
    int ex = -1;
    EXPECT(tlink_store_check(s, "a", &ex) == TLINK_OK && ex == 1, "check present");
    EXPECT(tlink_store_check(s, "b", &ex) == TLINK_OK && ex == 0, "check absent");
    EXPECT(tlink_store_delete(s, "a") == TLINK_OK, "delete");
    EXPECT(tlink_store_check(s, "a", &ex) == TLINK_OK && ex == 0, "deleted");
    int64_t r = 0;
    EXPECT(tlink_store_add(s, "n", 5, &r) == TLINK_OK && r == 5, "add");
    EXPECT(tlink_store_add(s, "n", -7, &r) == TLINK_OK && r == -2, "add negative");
    /* a big value */
    size_t big = 3 << 20;
    char *b = malloc(big);
    for (size_t i = 0; i < big; i++) b[i] = (char)(i * 7);
    EXPECT(tlink_store_set(s, "big", b, big) == TLINK_OK, "set big");
    EXPECT(tlink_store_get(s, "big", &v, &len, 5) == TLINK_OK && len == big && !memcmp(v, b, big), "get big");
    tlink_free(v);
    free(b);
    /* blocking get released by another client */
    pthread_t th;
    pthread_create(&th, NULL, late_setter, NULL);
    double t0 = 0;
    EXPECT(tlink_store_get(s, "late", &v, &len, 5) == TLINK_OK && len == 5 && !memcmp(v, "hello", 5), "blocking get");
    tlink_free(v);
    pthread_join(th, NULL);
    EXPECT(tlink_store_add(s, "counter", 0, &r) == TLINK_OK && r == 100, "concurrent adds: %lld", (long long)r);
    /* timeout names missing keys; the connection recovers */
    (void)t0;
    EXPECT(tlink_store_get(s, "never", &v, &len, 0.2) == TLINK_ERR_TIMEOUT, "get timeout");
    const char *keys[] = {"n", "missing1", "missing2"};
    EXPECT(tlink_store_wait(s, keys, 3, 0.3) == TLINK_ERR_TIMEOUT, "wait timeout");
    EXPECT(strstr(tlink_store_last_error(s), "missing1") && strstr(tlink_store_last_error(s), "missing2"),
           "wait names missing keys: %s", tlink_store_last_error(s));
    EXPECT(tlink_store_add(s, "n", 2, &r) == TLINK_OK && r == 0, "usable after timeout");
    /* bad input */
    EXPECT(tlink_store_set(s, "", "x", 1) == TLINK_ERR_INVALID_ARG, "empty key");
    tlink_store *bad;
    EXPECT(tlink_store_connect("no-port-here", 1, &bad) == TLINK_ERR_INVALID_ARG, "bad address");
    EXPECT(tlink_store_connect("127.0.0.1:1", 0.3, &bad) == TLINK_ERR_BOOTSTRAP, "refused");
    tlink_store_server *srv2;
    EXPECT(tlink_store_server_start("127.0.0.1", tlink_store_server_port(srv), &srv2) != TLINK_OK, "port in use");
    tlink_store_close(s);
    tlink_store_server_stop(srv);
    printf("%s (%d failures)\n", fails ? "FAIL" : "ok", fails);
    return fails ? 1 : 0;
}
