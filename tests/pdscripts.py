"""Our own packetdrill scripts that both the model's tests (tests/sim/tcp) and the real
kernel's (tests/kernel) run: one copy, so the two sides check the same lines."""

from __future__ import annotations

# A non-blocking writer against a 4000-byte SO_SNDBUF (doubled to 8000): the bytes copied
# before the buffer fills, EAGAIN, and POLLOUT once ACKs free enough (tcp_poll).
NONBLOCK = """
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_SNDBUF, [4000], 4) = 0
   +0...0.100 connect(3, ..., ...) = 0
   +0 > S 0:0(0) <...>
  +.1 < S. 0:0(0) ack 1 win 4000 <mss 1000>
   +0 > . 1:1(0) ack 1
   +0 fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0
   +0 write(3, ..., 12000) = 6000
   +0 > P. 1:2001(2000) ack 1
   +0 > P. 2001:4001(2000) ack 1
   +0 write(3, ..., 1000) = -1 EAGAIN (Resource temporarily unavailable)
   +0 poll([{fd=3, events=POLLOUT, revents=0}], 1, 0) = 0
  +.05 < . 1:1(0) ack 2001 win 4000
   +0 > P. 4001:6001(2000) ack 1
   +0 poll([{fd=3, events=POLLOUT, revents=0}], 1, 0) = 0
  +.05 < . 1:1(0) ack 4001 win 4000
   +0 poll([{fd=3, events=POLLOUT, revents=POLLOUT}], 1, 0) = 1
   +0 write(3, ..., 12000) = 4000
   +0 > P. 6001:8001(2000) ack 1
"""


# A client with TCP_NODELAY writing 100 then 2100 bytes to a peer with MSS 1000: {setup} is a
# set-up line (e.g. an ethtool one), {packets} the segments expected for the second write.
CLIENT = """{setup}
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_TCP, TCP_NODELAY, [{nodelay}], 4) = 0
   +0...0.100 connect(3, ..., ...) = 0
   +0 > S 0:0(0) <...>
  +.1 < S. 0:0(0) ack 1 win 20000 <mss 1000,nop,wscale 0>
   +0 > . 1:1(0) ack 1
   +0 write(3, ..., 100) = 100
   +0 > P. 1:101(100) ack 1
   +0 write(3, ..., 2100) = 2100
{packets}
"""
TSO = "   +0 > P. 101:2101(2000) ack 1\n   +0 > P. 2101:2201(100) ack 1"
NO_TSO = "   +0 > . 101:1101(1000) ack 1\n   +0 > P. 1101:2101(1000) ack 1\n   +0 > P. 2101:2201(100) ack 1"


# A blocking writer on that buffer, ended by a reset. {write} is the blocked write: after
# copying 6000 bytes it returns their count and leaves sk_err for the next write, which gets
# ECONNRESET; or, after a non-blocking write filled the buffer, it copies nothing and returns
# ECONNRESET itself. Either way sock_error consumed sk_err, and a reset connection's
# sk_shutdown holds SEND_SHUTDOWN: every later write gets EPIPE.
_RESET_OPEN = NONBLOCK.split("   +0 fcntl")[0]
RESET_AFTER_COPY = _RESET_OPEN + (
    "   +0...0.050 write(3, ..., 12000) = 6000\n"
    "   +0 > P. 1:2001(2000) ack 1\n"
    "   +0 > P. 2001:4001(2000) ack 1\n"
    " +.05 < R. 1:1(0) ack 1 win 0\n"
    "   +0 write(3, ..., 1000) = -1 ECONNRESET (Connection reset by peer)\n"
    "   +0 write(3, ..., 1000) = -1 EPIPE (Broken pipe)\n"
    "   +0 write(3, ..., 1000) = -1 EPIPE (Broken pipe)\n"
)
RESET_BEFORE_COPY = _RESET_OPEN + (
    "   +0 fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0\n"
    "   +0 write(3, ..., 12000) = 6000\n"
    "   +0 > P. 1:2001(2000) ack 1\n"
    "   +0 > P. 2001:4001(2000) ack 1\n"
    "   +0 fcntl(3, F_SETFL, O_RDWR) = 0\n"
    "   +0...0.050 write(3, ..., 1000) = -1 ECONNRESET (Connection reset by peer)\n"
    " +.05 < R. 1:1(0) ack 1 win 0\n"
    "   +0 write(3, ..., 1000) = -1 EPIPE (Broken pipe)\n"
    "   +0 write(3, ..., 1000) = -1 EPIPE (Broken pipe)\n"
)

# A listener that accepts one connection whose SYN offers SACK and window scaling (MSS 1000).
OPEN_SACK = """
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 65535 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <...>
 +.04 < . 1:1(0) ack 1 win 500
   +0 accept(3, ..., ...) = 4
"""
