"""packetdrill scripts against the TCP model: a lexer and parser for the language as the
kernel's ``tools/testing/selftests/net/packetdrill/`` scripts use it (:mod:`.parser`), and a
runner (:mod:`.runner`) that drives one local endpoint of the model (Linux 6.4) against the
script's scripted peer (:mod:`.peer`)."""
