# make static: build/static/efa-preflight, depending on nothing but glibc.
#
# libcurl (with its TLS library), libyaml and cJSON are linked from their
# static archives; NCCL, CUDA and libfabric stay dlopen()ed as always. The
# glibc baseline is that of the build host (the Dockerfile builds on Debian
# 11: glibc 2.31); `mk/static.sh check-needed` prints it.
#
#   make static                          system archives (Debian: *-dev packages)
#   make static CURL_PREFIX=/opt/curl    a libcurl built with only OpenSSL + zlib
#               CJSON_SRC=/src/cJSON     compile cJSON from its source tree
#               STATIC_CFLAGS=-I...      extra include paths (e.g. libfabric headers)
#   make static-debian                   on Debian/Ubuntu: fetch the distribution's
#                                        curl and cJSON sources (apt-get source),
#                                        build that libcurl, then make static
#
# When an archive is missing it names every missing one and fails, before
# compiling anything.

STATIC_DIR    := build/static
STATIC_BIN    := $(STATIC_DIR)/efa-preflight
CURL_PREFIX   ?=
CJSON_SRC     ?=
STATIC_CFLAGS ?=

.PHONY: static static-debian static-link

static-debian:
	mk/static-sources.sh $(STATIC_DIR)/deps
	$(MAKE) static CURL_PREFIX=$(CURDIR)/$(STATIC_DIR)/deps/curl \
	    CJSON_SRC=$(CURDIR)/$(STATIC_DIR)/deps/cjson

static:
	@mkdir -p $(STATIC_DIR)
	CC='$(CC)' CURL_PREFIX='$(CURL_PREFIX)' CJSON_SRC='$(CJSON_SRC)' \
	    mk/static.sh archives $(STATIC_DIR)/archives.txt
	$(MAKE) BUILD=$(STATIC_DIR) PF_HTTPD=0 CURL_PREFIX='$(CURL_PREFIX)' CJSON_SRC='$(CJSON_SRC)' \
	    SANFLAGS= CFLAGS='$(CFLAGS) $(STATIC_INC) $(STATIC_CFLAGS)' static-link
	mk/static.sh check-needed $(STATIC_BIN)

# cJSON from source keeps its header at the top of the tree; the agent
# includes <cjson/cJSON.h>, so give it that layout.
ifneq ($(CJSON_SRC),)
STATIC_CJSON_OBJ := $(STATIC_DIR)/cjson/cJSON.o
$(STATIC_DIR)/include/cjson/cJSON.h: $(CJSON_SRC)/cJSON.h
	@mkdir -p $(dir $@)
	cp $< $@
$(STATIC_CJSON_OBJ): $(CJSON_SRC)/cJSON.c $(STATIC_DIR)/include/cjson/cJSON.h
	@mkdir -p $(dir $@)
	$(CC) -std=c89 -O2 -fno-strict-aliasing -fstack-protector-strong \
	    $(PF_CET_CFLAGS) -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=$(PF_FORTIFY_LEVEL) \
	    -fPIE -c $< -o $@
STATIC_HDRS := $(STATIC_DIR)/include/cjson/cJSON.h
endif
STATIC_INC := $(if $(CJSON_SRC),-I$(STATIC_DIR)/include) $(if $(CURL_PREFIX),-I$(CURL_PREFIX)/include)

# Run by the sub-make above with BUILD=$(STATIC_DIR): the agent's own
# objects, compiled by the Makefile's rule, then one static link.
$(MAIN_OBJ) $(AGENT_OBJS): | $(STATIC_HDRS)

static-link: $(MAIN_OBJ) $(AGENT_OBJS) $(STATIC_CJSON_OBJ)
	$(CC) $(CFLAGS) $(PF_LDFLAGS) -static-libgcc -o $(STATIC_BIN) $^ \
	    -Wl,--start-group $$(cat $(STATIC_DIR)/archives.txt) -Wl,--end-group \
	    -ldl -lpthread -lm
