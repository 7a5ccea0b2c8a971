/*
 * connect-load: a WebSocket connection-rate load generator for the benchmark's connection and
 * presence-join scenarios (bench/src/lib/native-fleet.ts drives it; see docs/benchmarks.md).
 *
 * Why native: on a 2-core machine the Node clients spend about as much CPU per connection as
 * the server they measure (socket objects, streams), so a connection-rate figure showed the load
 * generator, not the server. This client does the same wire work — a TCP connect, the RFC 6455
 * upgrade request, reading the 101 and the frames after it — with one epoll loop and no
 * per-connection allocation beyond a fixed slot.
 *
 * Protocol on stdin/stdout, one line each:
 *   connect <host> <concurrency> <timeout-ms> <marker|->   then "<port> <path>" lines, then "."
 *     → {"ok":…,"failed":…,"joined":…,"startUs":…,"lastOpenUs":…,"lastJoinUs":…,"firstError":"…"}
 *     A connection counts as open at its 101 and as joined when <marker> appears in what the
 *     server sends after it (server frames are unmasked, so the bytes are the text).
 *   close → closes every socket, {"closed":N}
 *   EOF → exits.
 * Times are CLOCK_MONOTONIC µs, the clock of Node's process.hrtime in the other bench processes.
 * Open sockets are read and discarded until closed, so the server never blocks on them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum state { IDLE, CONNECTING, HANDSHAKE, OPEN, JOINED, DONE };

typedef struct {
  int fd;
  int port;
  char *path;
  enum state state;
  char head[1024];
  int head_len;
  char carry[64];
  int carry_len;
} conn_t;

static conn_t *conns;
static int conn_count, conn_cap;
static char marker[64];
static int marker_len;
static int epfd;
static long ok_count, failed_count, joined_count, in_flight, next_conn;
static long long start_us, last_open_us, last_join_us;
static char first_error[200];

static long long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void note_error(const char *what) {
  if (!first_error[0]) snprintf(first_error, sizeof first_error, "%s", what);
}

/* A connection stops counting against the concurrency once it is joined (or open), or failed. */
static void settle(conn_t *c, enum state next) {
  if (c->state == CONNECTING || c->state == HANDSHAKE || (c->state == OPEN && marker_len)) in_flight--;
  c->state = next;
}

static void fail(conn_t *c, const char *why) {
  if (c->state != OPEN && c->state != JOINED) {
    failed_count++;
    note_error(why);
  }
  settle(c, DONE);
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

static void start_one(const char *host) {
  conn_t *c = &conns[next_conn++];
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
  inet_pton(AF_INET, host, &addr.sin_addr);
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  c->state = CONNECTING;
  in_flight++;
  if (c->fd < 0) {
    fail(c, strerror(errno));
    return;
  }
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c->fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
    fail(c, strerror(errno));
    return;
  }
  struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = (uint64_t)(c - conns)};
  epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

static void send_request(conn_t *c, const char *host) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err) {
    fail(c, strerror(err));
    return;
  }
  char request[2048];
  int n = snprintf(request, sizeof request,
                   "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                   c->path, host, c->port);
  if (write(c->fd, request, (size_t)n) != n) {
    fail(c, "could not write the upgrade request");
    return;
  }
  c->state = HANDSHAKE;
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)(c - conns)};
  epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Looks for the marker in what arrived after the 101, across reads. */
static void scan(conn_t *c, const char *data, int len) {
  if (c->state != OPEN || !marker_len || len <= 0) return;
  char joined[128];
  int take = len < marker_len - 1 ? len : marker_len - 1;
  memcpy(joined, c->carry, (size_t)c->carry_len);
  memcpy(joined + c->carry_len, data, (size_t)take);
  if (memmem(joined, (size_t)(c->carry_len + take), marker, (size_t)marker_len) ||
      memmem(data, (size_t)len, marker, (size_t)marker_len)) {
    joined_count++;
    last_join_us = now_us();
    settle(c, JOINED);
    return;
  }
  int keep = marker_len - 1;
  if (len >= keep) {
    memcpy(c->carry, data + len - keep, (size_t)keep);
    c->carry_len = keep;
  } else {
    int drop = c->carry_len + len - keep;
    if (drop > 0) {
      memmove(c->carry, c->carry + drop, (size_t)(c->carry_len - drop));
      c->carry_len -= drop;
    }
    memcpy(c->carry + c->carry_len, data, (size_t)len);
    c->carry_len += len;
  }
}

static void on_readable(conn_t *c) {
  static char buf[65536];
  for (;;) {
    ssize_t n = read(c->fd, buf, sizeof buf);
    if (n == 0) {
      fail(c, "closed by the server during the handshake");
      return;
    }
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) fail(c, strerror(errno));
      return;
    }
    const char *rest = buf;
    int rest_len = (int)n;
    if (c->state == HANDSHAKE) {
      int room = (int)sizeof c->head - 1 - c->head_len;
      int copy = rest_len < room ? rest_len : room;
      memcpy(c->head + c->head_len, buf, (size_t)copy);
      c->head_len += copy;
      c->head[c->head_len] = 0;
      char *end = strstr(c->head, "\r\n\r\n");
      if (!end) {
        if (c->head_len >= (int)sizeof c->head - 1) fail(c, "upgrade response too long");
        continue;
      }
      if (strncmp(c->head, "HTTP/1.1 101", 12) != 0) {
        char *eol = strstr(c->head, "\r\n");
        if (eol) *eol = 0;
        char why[200];
        snprintf(why, sizeof why, "handshake refused: %.160s", c->head);
        fail(c, why);
        return;
      }
      int used = (int)(end + 4 - c->head) - (c->head_len - copy);
      rest = buf + used;
      rest_len = (int)n - used;
      ok_count++;
      last_open_us = now_us();
      if (marker_len) c->state = OPEN;
      else settle(c, JOINED);
    }
    scan(c, rest, rest_len);
  }
}

static void run_connect(const char *host, long concurrency, long timeout_ms) {
  ok_count = failed_count = joined_count = in_flight = 0;
  last_open_us = last_join_us = 0;
  first_error[0] = 0;
  long first = next_conn;
  start_us = now_us();
  long long deadline = start_us + timeout_ms * 1000LL;
  struct epoll_event events[512];
  while (now_us() < deadline) {
    while (in_flight < concurrency && next_conn < conn_count) start_one(host);
    if (in_flight == 0 && next_conn >= conn_count) break;
    int n = epoll_wait(epfd, events, 512, 50);
    for (int i = 0; i < n; i++) {
      conn_t *c = &conns[events[i].data.u64];
      if (c->fd < 0) continue;
      if (c->state == CONNECTING) send_request(c, host);
      else on_readable(c);
    }
  }
  /* Whatever has not settled by the deadline counts as failed. */
  for (long i = first; i < next_conn; i++) {
    conn_t *c = &conns[i];
    if (c->state == CONNECTING || c->state == HANDSHAKE) fail(c, "timed out");
  }
  failed_count += conn_count - next_conn;
  printf("{\"ok\":%ld,\"failed\":%ld,\"joined\":%ld,\"startUs\":%lld,\"lastOpenUs\":%lld,\"lastJoinUs\":%lld",
         ok_count, failed_count, joined_count, start_us, last_open_us, last_join_us);
  if (first_error[0]) {
    printf(",\"firstError\":\"");
    for (const char *p = first_error; *p; p++)
      if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) putchar(*p);
    printf("\"");
  }
  printf("}\n");
  fflush(stdout);
}

/* Keeps reading open sockets (and seeing servers close them) while the harness waits. */
static void pump(int timeout_ms) {
  struct epoll_event events[512];
  int n = epoll_wait(epfd, events, 512, timeout_ms);
  for (int i = 0; i < n; i++) {
    conn_t *c = &conns[events[i].data.u64];
    if (c->fd >= 0) on_readable(c);
  }
}

static int stdin_ready(void) {
  fd_set set;
  FD_ZERO(&set);
  FD_SET(0, &set);
  struct timeval tv = {0, 0};
  return select(1, &set, NULL, NULL, &tv) > 0;
}

int main(void) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  epfd = epoll_create1(EPOLL_CLOEXEC);
  /* stdin is read through stdio: safe because the harness sends one command and waits for its reply. */
  char line[4096];
  for (;;) {
    while (!stdin_ready()) pump(20);
    if (!fgets(line, sizeof line, stdin)) break;
    char host[64], mark[64];
    long concurrency, timeout_ms;
    if (sscanf(line, "connect %63s %ld %ld %63s", host, &concurrency, &timeout_ms, mark) == 4) {
      marker_len = strcmp(mark, "-") == 0 ? 0 : (int)strlen(mark);
      memcpy(marker, mark, (size_t)marker_len);
      while (fgets(line, sizeof line, stdin) && strcmp(line, ".\n") != 0) {
        if (conn_count == conn_cap) {
          conn_cap = conn_cap ? conn_cap * 2 : 1024;
          conns = realloc(conns, sizeof *conns * (size_t)conn_cap);
        }
        conn_t *c = &conns[conn_count];
        memset(c, 0, sizeof *c);
        char path[4000];
        if (sscanf(line, "%d %3999s", &c->port, path) != 2) continue;
        c->path = strdup(path);
        c->fd = -1;
        conn_count++;
      }
      run_connect(host, concurrency, timeout_ms);
    } else if (strncmp(line, "close", 5) == 0) {
      long closed = 0;
      for (long i = 0; i < conn_count; i++) {
        if (conns[i].fd >= 0) {
          close(conns[i].fd);
          closed++;
        }
        free(conns[i].path);
      }
      conn_count = 0;
      next_conn = 0;
      printf("{\"closed\":%ld}\n", closed);
      fflush(stdout);
    }
  }
  return 0;
}
