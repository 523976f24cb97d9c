# pf_free_port: a TCP port the kernel just handed out on 127.0.0.1 and
# let go, instead of a fixed or random number another test run may hold.
# Whoever binds it next may still race for it: callers that start a
# listener on it retry when it says the port is in use.
pf_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
