/*
 * churn-load: the soak run's WebSocket client (bench/src/soak/fleet.ts drives it; see
 * docs/reliability.md, "Soak run"). It holds thousands of sockets open for as long as the harness
 * says, answers the server's pings (a socket that never answers would be closed by the gateway's
 * idle timeout), reads and discards everything else, and reports each socket's fate.
 *
 * Why native: connect-load.c's reasons (a Node client costs about as much CPU per socket as the
 * gateway it loads), and the soak holds 20,000 sockets for ten minutes on a 2-core machine.
 *
 * Asynchronous line protocol. Commands on stdin:
 *   o <id> <tag> <port> <path>  open socket <id> (a small integer the harness reuses) to
 *                               127.0.0.1; <tag> is echoed in its events
 *   c <id> <tag>                close socket <id> if it is still <tag>: a close frame 1000, then
 *                               the TCP close
 *   s                           report counters
 * Events on stdout, in the order they happened (the tag tells a reused id's sockets apart: a
 * close command can cross the server's close of the same socket):
 *   o <id> <tag>                the 101 arrived: the socket is open
 *   f <id> <tag> <reason>       it never opened (refused, reset, timed out…)
 *   g <id> <tag> <code>         the server ended an open socket: its close code, 1005 when the
 *                               close frame had none, 1006 when the TCP connection ended without one
 *   s {"open":N,"frames":N,"bytes":N,"pings":N}
 * EOF on stdin exits. A socket that has not opened 15 s after its command fails with "timed out".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum state { FREE, CONNECTING, HANDSHAKE, OPEN };

typedef struct {
  int fd;
  int port;
  uint32_t gen;
  long tag;
  uint8_t state;
  long long deadline_ms;
  char *path; /* while connecting */
  char *head; /* while in the handshake */
  int head_len;
  /* Frame parser (server frames are never masked). */
  uint8_t hdr[10];
  uint8_t hdr_len;
  uint8_t opcode;
  uint64_t remaining;
  uint8_t ctl[125];
  uint8_t ctl_len;
} slot_t;

static slot_t *slots;
static long slot_cap;
static int epfd;
static long open_count;
static unsigned long long frames, bytes, pings;
static const uint8_t MASK[4] = {0x37, 0xfa, 0x21, 0x3d};

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static slot_t *slot(long id) {
  if (id >= slot_cap) {
    long cap = slot_cap ? slot_cap : 1024;
    while (cap <= id) cap *= 2;
    slots = realloc(slots, sizeof *slots * (size_t)cap);
    memset(slots + slot_cap, 0, sizeof *slots * (size_t)(cap - slot_cap));
    for (long i = slot_cap; i < cap; i++) slots[i].fd = -1;
    slot_cap = cap;
  }
  return &slots[id];
}

static void release(slot_t *s) {
  if (s->fd >= 0) close(s->fd);
  if (s->state == OPEN) open_count--;
  s->fd = -1;
  s->state = FREE;
  s->gen++;
  free(s->path);
  free(s->head);
  s->path = s->head = NULL;
}

static void failed(long id, const char *why) {
  printf("f %ld %ld %s\n", id, slots[id].tag, why);
  release(&slots[id]);
}

static void gone(long id, int code) {
  printf("g %ld %ld %d\n", id, slots[id].tag, code);
  release(&slots[id]);
}

static void send_frame(slot_t *s, uint8_t opcode, const uint8_t *payload, int len) {
  uint8_t frame[2 + 4 + 125];
  frame[0] = 0x80 | opcode;
  frame[1] = 0x80 | (uint8_t)len;
  memcpy(frame + 2, MASK, 4);
  for (int i = 0; i < len; i++) frame[6 + i] = payload[i] ^ MASK[i % 4];
  /* A control frame is tiny and the socket's buffer is drained by the server: a short write is
     as good as a lost pong, which the next ping repeats. */
  if (write(s->fd, frame, (size_t)(6 + len)) < 0) return;
}

static void start_open(long id, long tag, int port, const char *path) {
  slot_t *s = slot(id);
  if (s->state != FREE) release(s);
  s->tag = tag;
  s->port = port;
  s->path = strdup(path);
  s->deadline_ms = now_ms() + 15000;
  s->state = CONNECTING;
  s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) {
    failed(id, strerror(errno));
    return;
  }
  int one = 1;
  setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(s->fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
    failed(id, strerror(errno));
    return;
  }
  struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = (uint64_t)id | ((uint64_t)s->gen << 32)};
  epoll_ctl(epfd, EPOLL_CTL_ADD, s->fd, &ev);
}

static void send_upgrade(long id) {
  slot_t *s = &slots[id];
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err) {
    failed(id, strerror(err));
    return;
  }
  char request[4400];
  int n = snprintf(request, sizeof request,
                   "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                   s->path, s->port);
  if (write(s->fd, request, (size_t)n) != n) {
    failed(id, "could not write the upgrade request");
    return;
  }
  free(s->path);
  s->path = NULL;
  s->head = malloc(1024);
  s->head_len = 0;
  s->state = HANDSHAKE;
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)id | ((uint64_t)s->gen << 32)};
  epoll_ctl(epfd, EPOLL_CTL_MOD, s->fd, &ev);
}

/* Feeds bytes after the 101 through the frame parser; returns 0 once the socket was released. */
static int frames_in(long id, const uint8_t *p, long n) {
  slot_t *s = &slots[id];
  while (n > 0) {
    if (s->hdr_len < 2 || s->hdr_len < 2 + ((s->hdr[1] & 0x7f) == 126 ? 2 : (s->hdr[1] & 0x7f) == 127 ? 8 : 0)) {
      s->hdr[s->hdr_len++] = *p++;
      n--;
      if (s->hdr_len < 2) continue;
      int len7 = s->hdr[1] & 0x7f;
      int need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
      if (s->hdr_len < need) continue;
      uint64_t len = (uint64_t)len7;
      if (len7 == 126) len = ((uint64_t)s->hdr[2] << 8) | s->hdr[3];
      if (len7 == 127) {
        len = 0;
        for (int i = 2; i < 10; i++) len = (len << 8) | s->hdr[i];
      }
      s->opcode = s->hdr[0] & 0x0f;
      s->remaining = len;
      s->ctl_len = 0;
      if (s->remaining > 0) continue;
    } else {
      long take = (long)s->remaining < n ? (long)s->remaining : n;
      if (s->opcode >= 8) {
        for (long i = 0; i < take && s->ctl_len < sizeof s->ctl; i++) s->ctl[s->ctl_len++] = p[i];
      } else {
        bytes += (unsigned long long)take;
      }
      p += take;
      n -= take;
      s->remaining -= (uint64_t)take;
      if (s->remaining > 0) continue;
    }
    /* A whole frame. */
    if (s->opcode == 0x9) {
      pings++;
      send_frame(s, 0xA, s->ctl, s->ctl_len);
    } else if (s->opcode == 0x8) {
      int code = s->ctl_len >= 2 ? (s->ctl[0] << 8) | s->ctl[1] : 1005;
      send_frame(s, 0x8, s->ctl, s->ctl_len >= 2 ? 2 : 0);
      gone(id, code);
      return 0;
    } else if (s->hdr[0] & 0x80) {
      frames++;
    }
    s->hdr_len = 0;
  }
  return 1;
}

static void on_readable(long id) {
  static uint8_t buf[65536];
  slot_t *s = &slots[id];
  for (;;) {
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      if (s->state == OPEN) gone(id, 1006);
      else failed(id, n == 0 ? "closed by the server during the handshake" : strerror(errno));
      return;
    }
    if (n < 0) return;
    const uint8_t *rest = buf;
    long rest_len = n;
    if (s->state == HANDSHAKE) {
      int room = 1023 - s->head_len;
      int copy = n < room ? (int)n : room;
      memcpy(s->head + s->head_len, buf, (size_t)copy);
      s->head_len += copy;
      s->head[s->head_len] = 0;
      char *end = strstr(s->head, "\r\n\r\n");
      if (!end) {
        if (s->head_len >= 1023) failed(id, "upgrade response too long");
        continue;
      }
      if (strncmp(s->head, "HTTP/1.1 101", 12) != 0) {
        char *eol = strstr(s->head, "\r\n");
        if (eol) *eol = 0;
        char why[200];
        snprintf(why, sizeof why, "handshake refused: %.160s", s->head);
        failed(id, why);
        return;
      }
      int used = (int)(end + 4 - s->head) - (s->head_len - copy);
      rest = buf + used;
      rest_len = n - used;
      free(s->head);
      s->head = NULL;
      s->state = OPEN;
      s->hdr_len = 0;
      open_count++;
      printf("o %ld %ld\n", id, s->tag);
    }
    if (!frames_in(id, rest, rest_len)) return;
  }
}

static char line[8192];
static int line_len;

static void command(char *text) {
  long id, tag;
  int port;
  char path[4096];
  if (sscanf(text, "o %ld %ld %d %4095s", &id, &tag, &port, path) == 4) {
    start_open(id, tag, port, path);
  } else if (sscanf(text, "c %ld %ld", &id, &tag) == 2) {
    if (id >= slot_cap || slots[id].tag != tag || slots[id].state == FREE) return;
    if (slots[id].state == OPEN) {
      send_frame(&slots[id], 0x8, (const uint8_t *)"\x03\xe8", 2);
      release(&slots[id]);
    } else {
      failed(id, "closed before it opened");
    }
  } else if (text[0] == 's') {
    printf("s {\"open\":%ld,\"frames\":%llu,\"bytes\":%llu,\"pings\":%llu}\n", open_count, frames, bytes, pings);
  }
}

/* Reads what stdin has; returns 0 at EOF. */
static int read_commands(void) {
  for (;;) {
    ssize_t n = read(0, line + line_len, sizeof line - 1 - (size_t)line_len);
    if (n == 0) return 0;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    line_len += (int)n;
    char *start = line;
    char *nl;
    while ((nl = memchr(start, '\n', (size_t)(line + line_len - start)))) {
      *nl = 0;
      command(start);
      start = nl + 1;
    }
    line_len -= (int)(start - line);
    memmove(line, start, (size_t)line_len);
  }
}

int main(void) {
  /* Root may raise its own hard limit; anyone may raise the soft one to the hard one. */
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    struct rlimit want = {65536, 65536};
    if (lim.rlim_max >= 65536 || setrlimit(RLIMIT_NOFILE, &want) != 0) {
      lim.rlim_cur = lim.rlim_max;
      setrlimit(RLIMIT_NOFILE, &lim);
    }
  }
  epfd = epoll_create1(EPOLL_CLOEXEC);
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  struct epoll_event in = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
  epoll_ctl(epfd, EPOLL_CTL_ADD, 0, &in);
  struct epoll_event events[512];
  long long next_sweep = now_ms() + 1000;
  for (;;) {
    int n = epoll_wait(epfd, events, 512, 200);
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == UINT64_MAX) {
        if (!read_commands()) {
          fflush(stdout);
          return 0;
        }
        continue;
      }
      long id = (long)(events[i].data.u64 & 0xffffffffu);
      uint32_t gen = (uint32_t)(events[i].data.u64 >> 32);
      if (id >= slot_cap || slots[id].gen != gen || slots[id].state == FREE) continue;
      if (slots[id].state == CONNECTING) send_upgrade(id);
      else on_readable(id);
    }
    long long now = now_ms();
    if (now >= next_sweep) {
      next_sweep = now + 1000;
      for (long id = 0; id < slot_cap; id++)
        if ((slots[id].state == CONNECTING || slots[id].state == HANDSHAKE) && now > slots[id].deadline_ms)
          failed(id, "timed out");
    }
    fflush(stdout);
  }
}
