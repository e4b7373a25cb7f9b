# tablestore: PGXS build.  The control file is the only place the version is set.
# tablestore_router, the scale-out router, is built from the same library
# and versioned by its own control file (tablestore_router.control).
EXTENSION = tablestore tablestore_router
EXTVERSION = $(shell sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'/\1/p" tablestore.control)
ROUTERVERSION = $(shell sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'/\1/p" tablestore_router.control)

MODULE_big = tablestore
# Every object, by component (no wildcard: a file is part of the build
# because it is named here).
OBJS_TSKEY = $(addprefix src/tskey/,handler.o page.o build.o buildsort.o insert.o scan.o \
	vacuum.o verify.o xlog.o)
OBJS_FILTER = $(addprefix src/filter/,parse.o format.o bind.o) src/edmtext.o
OBJS_CORE = $(addprefix src/,module.o errors.o utf16.o edm.o key.o entity.o \
	entityout.o edmvalue.o entityjson.o subxact.o entityrel.o tables.o entityops.o entityspi.o \
	entitywrite.o batch.o queryplan.o query.o propindex.o tableacl.o ttl.o)
OBJS_ROUTER = $(addprefix src/router/,config.o hash.o locks.o transport.o errors.o \
	api.o merge.o stream.o propindex.o ttl.o) src/routedcall.o
OBJS = $(OBJS_CORE) $(OBJS_FILTER) $(OBJS_TSKEY) $(OBJS_ROUTER)
DATA_built = sql/tablestore--$(EXTVERSION).sql sql/tablestore_router--$(ROUTERVERSION).sql
# the base install scripts (0.1.0; the router's 0.4.0) and the upgrade
# scripts: an earlier version installs from its base up the chain
DATA = $(filter-out $(DATA_built),$(wildcard sql/tablestore--*.sql sql/tablestore_router--*.sql))
EXTRA_CLEAN = sql/*.tmp results regression.diffs regression.out output_iso

# the router reads node strings with libpq's own parser (PQconninfoParse)
PG_CPPFLAGS = -Isrc -I$(libpq_srcdir)
SHLIB_LINK_INTERNAL = $(libpq)
PG_CFLAGS += -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers

# pg_regress: test/sql/*.sql, expected output in expected/ (top level).
REGRESS = $(patsubst test/sql/%.sql,%,$(sort $(wildcard test/sql/*.sql)))
REGRESS_OPTS = --inputdir=test --load-extension=tablestore

# isolation tests: test/specs/*.spec, expected output in expected/.
ISOLATION = $(patsubst test/specs/%.spec,%,$(sort $(wildcard test/specs/*.spec)))
# --outputdir=. (after pgxs's output_iso) so that expected/ at the top is found
ISOLATION_OPTS = --inputdir=test --outputdir=. --load-extension=tablestore

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

sql/tablestore--$(EXTVERSION).sql: sql/tablestore.sql
	cp $< $@
# The router's script: sql/tablestore_router.sql with the node's key type,
# API and service properties put in (tools/router-api.pl, which fails when
# the two scripts diverge).
sql/tablestore_router--$(ROUTERVERSION).sql: sql/tablestore_router.sql sql/tablestore.sql tools/router-api.pl
	perl tools/router-api.pl sql/tablestore.sql $< >$@.tmp
	mv $@.tmp $@

# Every C function the scripts declare is in the library (a node function
# that the router declares as router_<name> without routing it fails here).
all: check-sql-symbols
.PHONY: check-sql-symbols
check-sql-symbols: $(DATA) $(DATA_built) $(shlib)
	tools/check-sql-symbols.sh $(shlib) $(DATA) $(DATA_built)

# The $filter parser outside the server: unit tests and a libFuzzer target.
FILTER_SRC = src/filter/parse.c src/filter/format.c src/edmtext.c

test/unit/filter_test: test/unit/filter_test.c $(FILTER_SRC) src/filter/filter.h src/edmtext.h
	$(CC) -std=gnu99 -Wall -Wextra -Werror -g -Isrc -o $@ test/unit/filter_test.c $(FILTER_SRC) -lm

fuzz/filter_fuzzer: fuzz/filter_fuzzer.c $(FILTER_SRC) src/filter/filter.h src/edmtext.h
	clang -g -O1 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -Isrc -o $@ fuzz/filter_fuzzer.c $(FILTER_SRC) -lm

# The UTF-16 key order shared with the gateway (src/utf16.c), against a
# reference, under AddressSanitizer (malformed UTF-8 is read in bounds).
test/unit/utf16_test: test/unit/utf16_test.c src/utf16.c src/utf16.h
	$(CC) -std=gnu99 -Wall -Wextra -Werror -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
		-Isrc -o $@ test/unit/utf16_test.c src/utf16.c

.PHONY: unit fuzz
unit: test/unit/filter_test test/unit/utf16_test
	test/unit/filter_test
	test/unit/utf16_test
fuzz: fuzz/filter_fuzzer

# tablestore-gateway, the HTTP gateway: a separate program (gateway/Makefile)
.PHONY: gateway
gateway:
	$(MAKE) -C gateway

# The tiers beyond `make installcheck` (regress and isolation, against a
# running server): the multi-server TAP tests (test/t, on PostgreSQL's
# PostgreSQL::Test::Cluster, run as the postgres OS user), and the long
# random and stress runs, each on throwaway servers of its own.  The test
# command, tools/run-tests.sh, runs these and everything else.
.PHONY: tapcheck randomcheck
tapcheck:
	PGBIN=$$($(PG_CONFIG) --bindir) tools/run-tap.sh
randomcheck:
	PGBIN=$$($(PG_CONFIG) --bindir) bash test/stress.sh
	PGBIN=$$($(PG_CONFIG) --bindir) bash test/sqlsmith.sh
	PGBIN=$$($(PG_CONFIG) --bindir) bash test/fuzz_live.sh
