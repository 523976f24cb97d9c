/* Test helper: a TCP port no one on this host holds now, for a test whose
 * ranks rendezvous on loopback, so two checkouts running the unit tests
 * at once never meet on a fixed port. */
#ifndef PF_TEST_FREE_PORT_H
#define PF_TEST_FREE_PORT_H

/* Bind the wildcard address (dual-stack where IPv6 is up, as rank 0
 * listens) to port 0, read the port the kernel gave, close, return it.
 * Call it once per test, before forking, so every rank gets the same
 * port. Fails the test when no port can be had. */
int pf_test_free_port(void);

#endif
