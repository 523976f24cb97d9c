/* Where the GPU double's ranks of one communicator meet when they live in
 * several processes: a POSIX shared-memory segment named from the unique
 * id, so every process that was handed the same id opens the same one.
 *
 * An all_reduce is op number seq of its communicator (every rank launches
 * the same sequence, as NCCL requires). Op seq uses slot seq % MEET_SLOTS
 * in round seq / MEET_SLOTS: each process adds its ranks' send buffers
 * into the slot under the slot's lock (deposit), waits until all nranks
 * have (ready), copies the sum out (result) and says so (leave); the last
 * to leave frees the slot for the round after. A process deposits op seq+1
 * only after it finished op seq, so with two slots a deposit never waits
 * for a slot: every rank left op seq-1 before anyone finished op seq.
 *
 * Every wait is bounded (the lock, by the caller's deadline); nothing
 * blocks but the lock, held only for one vector add. The segment is
 * unlinked as soon as every rank has attached, so a crash leaves nothing
 * behind in /dev/shm once the group has met. */
#ifndef PF_DOUBLE_MEET_H
#define PF_DOUBLE_MEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEET_SLOTS 2

struct meet;

/* Open (creating if first) the segment for id; nranks is the
 * communicator's size, slot_bytes the largest all_reduce it takes. NULL
 * with why filled on failure. */
struct meet *meet_open(const void *id, size_t id_len, int nranks,
                       size_t slot_bytes, char *why, size_t len);
/* k more of this process's ranks are in; unlinks the name once all are. */
void meet_join(struct meet *m, int k);
void meet_close(struct meet *m);
/* The segment's name in /dev/shm ("/pf-double-<hash of the id>"). */
const char *meet_name(const struct meet *m);

/* Add nb buffers of count floats as op seq. 1 done, 0 slot not free yet,
 * -1 failed (why: too large, sizes disagree, lock not taken by deadline,
 * a monotonic time in seconds). */
int meet_deposit(struct meet *m, uint64_t seq, const float *const *bufs,
                 int nb, size_t count, double deadline, char *why,
                 size_t len);
/* Whether every rank deposited op seq; then its sum. */
bool meet_ready(const struct meet *m, uint64_t seq);
const float *meet_result(const struct meet *m, uint64_t seq);
/* nb of this process's ranks are done with op seq. */
void meet_leave(struct meet *m, uint64_t seq, int nb);

#endif
