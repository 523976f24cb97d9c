# `make asan` runs the unit and integration tests under ASan + UBSan (see the
# Makefile). LeakSanitizer reads its suppressions from tests/lsan.supp, each
# entry justified there; every process the tests start inherits this.
asan: export LSAN_OPTIONS := suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
