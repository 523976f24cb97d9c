/* wire: length-prefixed frames over a non-blocking socket, every wait under
 * a deadline, plus a bounds-checked byte codec for message bodies.
 *
 * A frame is [u32 big-endian length][u8 type][length-1 body bytes]; length
 * counts the type byte and may not exceed PF_WIRE_MAX_FRAME, so a peer can
 * never make us allocate or wait for more than that. Received bytes go
 * through a per-connection buffer, so a frame that arrives while nobody is
 * waiting for it (e.g. during pf_wire_pump) is kept for the next reader. */
#ifndef PF_WIRE_H
#define PF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

#define PF_WIRE_MAX_FRAME (4u << 20)

struct pf_conn {
    int fd;                           /* -1 = closed */
    uint8_t *buf;
    size_t off, have, cap;            /* unread bytes are buf[off..have) */
    uint32_t limit;                   /* largest frame taken; 0 = the max */
    int64_t heard_ms;                 /* pf_now_ms() of the last bytes read
                                         (0 = none yet): the rendezvous
                                         judges a silent peer by it */
};

struct pf_msg {
    uint8_t type;
    const uint8_t *body;              /* valid until the next call on conn */
    size_t len;
};

void pf_conn_init(struct pf_conn *c, int fd);
void pf_conn_close(struct pf_conn *c);

/* Send one frame; PF_ERR_TIMEOUT past deadline, PF_ERR_LOST if the peer
 * closed. */
pf_err pf_wire_send(struct pf_conn *c, uint8_t type, const void *body,
                    size_t len, int64_t deadline, char *err);
/* Receive the next frame, waiting until deadline. PF_ERR_LOST on EOF,
 * PF_ERR_PROTOCOL on an oversized or empty frame. */
pf_err pf_wire_recv(struct pf_conn *c, struct pf_msg *m, int64_t deadline,
                    char *err);
/* Read whatever has arrived without blocking (PF_ERR_LOST on EOF). */
pf_err pf_wire_pump(struct pf_conn *c, char *err);
/* Take the next buffered frame if one is complete: 1 taken, 0 none,
 * -1 malformed (message in err). */
int pf_wire_take(struct pf_conn *c, struct pf_msg *m, char *err);
/* True when a complete buffered frame of this type is waiting (not taken). */
bool pf_wire_has(const struct pf_conn *c, uint8_t type, struct pf_msg *m);
/* Remove the first complete buffered frame of this type, wherever it sits
 * (small control frames may overtake data nobody has asked for yet); up
 * to cap body bytes are copied to body, its length to *len. 1 taken,
 * 0 none. */
int pf_wire_extract(struct pf_conn *c, uint8_t type, uint8_t *body,
                    size_t cap, size_t *len);
/* Give the receive buffer back when nothing is buffered (a quiet
 * connection then costs no memory: rank 0 holds thousands). */
void pf_conn_shrink(struct pf_conn *c);

/* Body writer over a caller's buffer; overflow sticks and is checked once. */
struct pf_wbuf {
    uint8_t *p;
    size_t len, cap;
    bool overflow;
};
void pf_put_u8(struct pf_wbuf *w, uint8_t v);
void pf_put_u16(struct pf_wbuf *w, uint16_t v);
void pf_put_u32(struct pf_wbuf *w, uint32_t v);
void pf_put_bytes(struct pf_wbuf *w, const void *p, size_t n);
void pf_put_str(struct pf_wbuf *w, const char *s);   /* u16 length + bytes */

/* Body reader; any short read or bad string sets bad and yields zeros. */
struct pf_rbuf {
    const uint8_t *p;
    size_t len, off;
    bool bad;
};
uint8_t pf_get_u8(struct pf_rbuf *r);
uint16_t pf_get_u16(struct pf_rbuf *r);
uint32_t pf_get_u32(struct pf_rbuf *r);
void pf_get_bytes(struct pf_rbuf *r, void *out, size_t n);
/* Copies into out (cap bytes incl. NUL); too long or embedded NUL = bad. */
void pf_get_str(struct pf_rbuf *r, char *out, size_t cap);

#endif
