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
 *   sources <first-address> <count>   → {"sources":count}
 *     Later connects bind socket k (of this process) to <first-address> + (k mod <count>), an
 *     address of 127.0.0.0/8, before connecting: every source address has its own ~28,000
 *     ephemeral ports per destination, so 100,000 connections to a few ports do not run out of
 *     them (IP_BIND_ADDRESS_NO_PORT: the port is picked at connect, per 4-tuple). A count of 0
 *     stops binding.
 *   watch <marker>   → {"watching":N}   (N: sockets open now)
 *     Every open socket records the first time (CLOCK_MONOTONIC µs) <marker> appears in what the
 *     server sends from now on.
 *   deliveries <since-us> <timeout-ms>   → {"open":N,"seen":M,"dropped":D,"us":[…]}
 *     Waits (reading, answering pings) until every open socket saw the watched marker or the
 *     timeout passed, then lists each arrival minus <since-us> (µs, sorted); `open` counts the
 *     sockets open now, `dropped` those closed by the server since they opened.
 *   close → closes every socket, {"closed":N}
 *   EOF → exits.
 * Times are CLOCK_MONOTONIC µs, the clock of Node's process.hrtime in the other bench processes.
 * Open sockets are read until closed, so the server never blocks on them; their frames are
 * parsed just enough to answer each ping with its pong (a server closes a socket that stays silent
 * past its idle timeout, and connecting 100,000 takes longer than that).
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
  /* The watched marker: the first time it arrived (0: not yet), and the carry across reads. */
  long long seen_us;
  char wcarry[64];
  int wcarry_len;
  /* Server frame parsing (after the 101): header bytes so far, payload bytes left, ping payload. */
  unsigned char fhead[14];
  int fhead_len;
  int in_payload;
  unsigned long long fleft;
  int fop;
  unsigned char ping[125];
  int ping_len;
} conn_t;

static conn_t *conns;
static int conn_count, conn_cap;
static char marker[64];
static int marker_len;
static int epfd;
static long ok_count, failed_count, joined_count, in_flight, next_conn;
static long long start_us, last_open_us, last_join_us;
static char first_error[200];
static char watch_marker[64];
static int watch_len;
static long dropped_count;
static struct in_addr source_first;
static long source_count, source_next;

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
  } else {
    dropped_count++;
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
  if (source_count > 0) {
    struct sockaddr_in src = {.sin_family = AF_INET};
    src.sin_addr.s_addr = htonl(ntohl(source_first.s_addr) + (uint32_t)(source_next++ % source_count));
    setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    if (bind(c->fd, (struct sockaddr *)&src, sizeof src) < 0) {
      fail(c, strerror(errno));
      return;
    }
  }
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

/*
 * Whether `mk` appears in `data`, or straddles the end of the previous reads (kept in `carry`,
 * the last mk_len - 1 bytes seen) and the start of `data`.
 */
static int find_across(char *carry, int *carry_len, const char *data, int len, const char *mk, int mk_len) {
  char joined[128];
  int take = len < mk_len - 1 ? len : mk_len - 1;
  memcpy(joined, carry, (size_t)*carry_len);
  memcpy(joined + *carry_len, data, (size_t)take);
  if (memmem(joined, (size_t)(*carry_len + take), mk, (size_t)mk_len) ||
      memmem(data, (size_t)len, mk, (size_t)mk_len))
    return 1;
  int keep = mk_len - 1;
  if (len >= keep) {
    memcpy(carry, data + len - keep, (size_t)keep);
    *carry_len = keep;
  } else {
    int drop = *carry_len + len - keep;
    if (drop > 0) {
      memmove(carry, carry + drop, (size_t)(*carry_len - drop));
      *carry_len -= drop;
    }
    memcpy(carry + *carry_len, data, (size_t)len);
    *carry_len += len;
  }
  return 0;
}

/* Looks for the join marker (in what arrived after the 101) and the watched marker, across reads. */
static void scan(conn_t *c, const char *data, int len) {
  if (len <= 0) return;
  if (watch_len && !c->seen_us && find_across(c->wcarry, &c->wcarry_len, data, len, watch_marker, watch_len))
    c->seen_us = now_us();
  if (c->state != OPEN || !marker_len) return;
  if (find_across(c->carry, &c->carry_len, data, len, marker, marker_len)) {
    joined_count++;
    last_join_us = now_us();
    settle(c, JOINED);
  }
}

/* A masked pong carrying the ping's payload (the mask is zero, so the payload goes as is). */
static void send_pong(conn_t *c) {
  unsigned char frame[2 + 4 + 125];
  frame[0] = 0x8A;
  frame[1] = (unsigned char)(0x80 | c->ping_len);
  memset(frame + 2, 0, 4);
  memcpy(frame + 6, c->ping, (size_t)c->ping_len);
  /* A full send buffer drops the pong: the next ping gets one. */
  if (write(c->fd, frame, (size_t)(6 + c->ping_len)) < 0) return;
}

/* Walks the server's frames (unmasked: a 2-byte header, a 16- or 64-bit length) to answer pings. */
static void frames(conn_t *c, const unsigned char *p, int len) {
  while (len > 0) {
    if (!c->in_payload) {
      c->fhead[c->fhead_len++] = *p++;
      len--;
      if (c->fhead_len < 2) continue;
      int l7 = c->fhead[1] & 0x7f;
      int need = 2 + (l7 == 126 ? 2 : l7 == 127 ? 8 : 0);
      if (c->fhead_len < need) continue;
      unsigned long long n = (unsigned long long)l7;
      if (l7 >= 126) {
        n = 0;
        for (int i = 2; i < need; i++) n = (n << 8) | c->fhead[i];
      }
      c->fop = c->fhead[0] & 0x0f;
      c->fleft = n;
      c->fhead_len = 0;
      c->ping_len = 0;
      if (n > 0) {
        c->in_payload = 1;
        continue;
      }
    } else {
      int take = (unsigned long long)len < c->fleft ? len : (int)c->fleft;
      if (c->fop == 9 && c->ping_len + take <= (int)sizeof c->ping) {
        memcpy(c->ping + c->ping_len, p, (size_t)take);
        c->ping_len += take;
      }
      p += take;
      len -= take;
      c->fleft -= (unsigned long long)take;
      if (c->fleft > 0) continue;
      c->in_payload = 0;
    }
    if (c->fop == 9) send_pong(c);
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
    if (c->fd >= 0) frames(c, (const unsigned char *)rest, rest_len);
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

static int is_open(const conn_t *c) { return c->fd >= 0 && (c->state == OPEN || c->state == JOINED); }

static int by_value(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

static void run_watch(const char *mark) {
  watch_len = (int)strlen(mark);
  memcpy(watch_marker, mark, (size_t)watch_len);
  long open = 0;
  for (long i = 0; i < conn_count; i++) {
    conns[i].seen_us = 0;
    conns[i].wcarry_len = 0;
    if (is_open(&conns[i])) open++;
  }
  printf("{\"watching\":%ld}\n", open);
  fflush(stdout);
}

static void run_deliveries(long long since_us, long timeout_ms) {
  long long deadline = now_us() + timeout_ms * 1000LL;
  long open, seen;
  for (;;) {
    open = seen = 0;
    for (long i = 0; i < conn_count; i++) {
      if (!is_open(&conns[i])) continue;
      open++;
      if (conns[i].seen_us) seen++;
    }
    if (seen >= open || now_us() >= deadline) break;
    pump(5);
  }
  long long *us = malloc(sizeof *us * (size_t)(conn_count + 1));
  long n = 0;
  for (long i = 0; i < conn_count; i++)
    if (conns[i].seen_us) us[n++] = conns[i].seen_us - since_us;
  qsort(us, (size_t)n, sizeof *us, by_value);
  printf("{\"open\":%ld,\"seen\":%ld,\"dropped\":%ld,\"us\":[", open, n, dropped_count);
  for (long i = 0; i < n; i++) printf(i ? ",%lld" : "%lld", us[i]);
  printf("]}\n");
  fflush(stdout);
  free(us);
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
    long long since;
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
    } else if (sscanf(line, "sources %63s %ld", host, &concurrency) == 2) {
      source_count = inet_pton(AF_INET, host, &source_first) == 1 ? concurrency : 0;
      source_next = 0;
      printf("{\"sources\":%ld}\n", source_count);
      fflush(stdout);
    } else if (sscanf(line, "watch %63s", mark) == 1) {
      run_watch(mark);
    } else if (sscanf(line, "deliveries %lld %ld", &since, &timeout_ms) == 2) {
      run_deliveries(since, timeout_ms);
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
      dropped_count = 0;
      watch_len = 0;
      printf("{\"closed\":%ld}\n", closed);
      fflush(stdout);
    }
  }
  return 0;
}
