/* libFuzzer target: the frame decoder on a real socket. The input is what
 * a peer sends; it is written into one end of a socket pair in pieces
 * whose sizes the input's first byte picks, and the other end pumps and
 * takes frames as the rendezvous does. Invariants: every frame taken lies
 * inside what was sent, frames never overlap, a malformed length is
 * reported, and the connection frees everything on close. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pf_conn c;
    struct pf_msg m;
    char err[PF_ERRLEN];
    size_t piece, off = 0, taken = 0;
    int sv[2];

    if (size < 1)
        return 0;
    piece = (size_t)data[0] + 1;
    data++;
    size--;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
        return 0;
    pf_conn_init(&c, sv[0]);
    for (;;) {
        size_t n = size - off < piece ? size - off : piece;
        pf_err pumped;
        int t;

        if (n && send(sv[1], data + off, n, MSG_NOSIGNAL) == (ssize_t)n)
            off += n;
        else if (off < size)
            break;                    /* socket buffer full: stop here */
        if (off == size && sv[1] >= 0) {
            close(sv[1]);
            sv[1] = -1;
        }
        pumped = pf_wire_pump(&c, err);
        while ((t = pf_wire_take(&c, &m, err)) == 1) {
            if (m.len + 1 > PF_WIRE_MAX_FRAME ||
                m.body < c.buf || m.body + m.len > c.buf + c.have)
                __builtin_trap();
            taken += 5 + m.len;
            if (taken > off)
                __builtin_trap();
            (void)pf_wire_has(&c, m.type, &m);
        }
        if (t < 0) {
            if (!err[0])
                __builtin_trap();
            break;
        }
        if (pumped != PF_OK)
            break;
    }
    if (sv[1] >= 0)
        close(sv[1]);
    pf_conn_close(&c);
    return 0;
}
