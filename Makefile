# pg_tide: PGXS build.
#
# The version lives in one place, pg_tide.control; the install script is
# assembled from extension/NN_*.sql (one file per concept, in order) into
# pg_tide--$(EXTVERSION).sql.  Released install scripts are frozen in
# extension/released/, upgrade scripts live in extension/updates/, and
# neither is edited once released (docs/development.md).

EXTENSION   = pg_tide
EXTVERSION := $(shell sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" pg_tide.control)

MODULE_big  = pg_tide
CORE_SRCS   = $(sort $(wildcard src/core/*.c))
ENGINE_SRCS = $(sort $(wildcard src/engine/*.c))
GLUE_SRCS   = $(sort $(wildcard src/*.c))
OBJS        = $(GLUE_SRCS:.c=.o) $(CORE_SRCS:.c=.o) $(ENGINE_SRCS:.c=.o)

INSTALL_PARTS = $(sort $(wildcard extension/[0-9]*.sql))
DATA_built  = $(EXTENSION)--$(EXTVERSION).sql
DATA        = $(sort $(wildcard extension/updates/$(EXTENSION)--*--*.sql extension/released/$(EXTENSION)--*.sql))

# pg_regress: every sql/NAME.sql is a test, compared with expected/NAME.out.
REGRESS      = $(basename $(notdir $(sort $(wildcard sql/*.sql))))
REGRESS_OPTS = --load-extension=$(EXTENSION)

PG_CONFIG ?= pg_config
PG_CPPFLAGS = -I$(srcdir)/src -I$(srcdir)/src/core -I$(srcdir)/src/engine
# Warnings are errors in our own code.  PostgreSQL's headers leave some
# parameters unused (PG_FUNCTION_ARGS), so that one warning stays off.
PG_CFLAGS   = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers

# Programs installed into pg_config --bindir (tide-launcher, tide-sim).
PG_INCLUDEDIR := $(shell $(PG_CONFIG) --includedir)
PG_LIBDIR     := $(shell $(PG_CONFIG) --libdir)
TOOL_CFLAGS  = -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wdeclaration-after-statement -Isrc/core -Isrc/engine
LAUNCHER_SRCS := $(sort $(wildcard src/launcher/*.c))
SIM_SRCS      := $(sort $(wildcard src/sim/*.c))
SCRIPTS_built := $(strip $(if $(LAUNCHER_SRCS),tide-launcher) $(if $(SIM_SRCS),tide-sim))
EXTRA_CLEAN   = $(SCRIPTS_built) test/unit/bin $(patsubst %.c,%,$(wildcard test/fuzz/fuzz_*.c))

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS does not track header dependencies: rebuild every object when any of
# our headers changes (a stale struct layout crashes the server).
$(OBJS): $(wildcard src/*.h src/core/*.h src/engine/*.h src/engine/*.def)

$(EXTENSION)--$(EXTVERSION).sql: $(INSTALL_PARTS) pg_tide.control
	@test -n "$(EXTVERSION)" || { echo "no default_version in pg_tide.control" >&2; exit 1; }
	{ printf -- '-- pg_tide %s: generated from extension/*.sql by make; edit those.\n' '$(EXTVERSION)'; \
	  printf -- '\\echo Use "CREATE EXTENSION pg_tide" to load this file. \\quit\n'; \
	  for f in $(INSTALL_PARTS); do printf '\n-- ---- %s\n' "$$f"; cat "$$f"; done; } > $@

tide-launcher: $(LAUNCHER_SRCS) $(CORE_SRCS) $(wildcard src/launcher/*.h src/core/*.h)
	$(CC) $(TOOL_CFLAGS) -I$(PG_INCLUDEDIR) -o $@ $(LAUNCHER_SRCS) $(CORE_SRCS) -L$(PG_LIBDIR) -lpq

tide-sim: $(SIM_SRCS) $(ENGINE_SRCS) $(CORE_SRCS) $(wildcard src/sim/*.h src/engine/*.h src/engine/*.def src/core/*.h)
	$(CC) $(TOOL_CFLAGS) -o $@ $(SIM_SRCS) $(ENGINE_SRCS) $(CORE_SRCS) -lm

# C unit tests of the plain-C core and engine, linked without the server.
# Each test/unit/test_*.c is one program that prints TAP.  The core and
# engine are compiled once (with the sanitizers, into test/unit/bin/obj)
# and linked into every test, not compiled again for each.
UNIT_SRCS = $(sort $(wildcard test/unit/test_*.c))
UNIT_BINS = $(patsubst test/unit/%.c,test/unit/bin/%,$(UNIT_SRCS))
UNIT_CFLAGS = $(TOOL_CFLAGS) -fsanitize=address,undefined -fno-omit-frame-pointer
UNIT_OBJS = $(patsubst src/%.c,test/unit/bin/obj/%.o,$(CORE_SRCS) $(ENGINE_SRCS))
test/unit/bin/obj/%.o: src/%.c $(wildcard src/core/*.h src/engine/*.h src/engine/*.def)
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) -c -o $@ $<
test/unit/bin/%: test/unit/%.c test/unit/tap.h $(UNIT_OBJS) $(wildcard src/core/*.h src/engine/*.h src/engine/*.def)
	@mkdir -p test/unit/bin
	$(CC) $(UNIT_CFLAGS) -Itest/unit -o $@ $< $(UNIT_OBJS) -lm

# The launcher's decisions (allocation states, reconcile, its reasons for
# not starting a command), without libpq.
LAUNCHER_UNIT_SRCS = src/launcher/util.c src/launcher/alloc.c src/launcher/reconcile.c src/launcher/command.c
test/unit/bin/test_launcher_%: test/unit/test_launcher_%.c test/unit/tap.h $(LAUNCHER_UNIT_SRCS) $(wildcard src/launcher/*.h)
	@mkdir -p test/unit/bin
	$(CC) $(UNIT_CFLAGS) -Itest/unit -Isrc/launcher -o $@ $< $(LAUNCHER_UNIT_SRCS)

unit: $(UNIT_BINS)

# libFuzzer targets (clang); not part of the test command: run them by hand,
# e.g. test/fuzz/fuzz_resvec -max_total_time=60
FUZZ_BINS = $(patsubst %.c,%,$(sort $(wildcard test/fuzz/fuzz_*.c)))
test/fuzz/fuzz_%: test/fuzz/fuzz_%.c $(CORE_SRCS)
	clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/core -o $@ $< $(CORE_SRCS)
fuzz: $(FUZZ_BINS)
.PHONY: unit fuzz
