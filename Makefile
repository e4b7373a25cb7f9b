# tablestore: PGXS build.  The control file is the only place the version is set.
EXTENSION = tablestore
EXTVERSION = $(shell sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'/\1/p" $(EXTENSION).control)

MODULE_big = tablestore
OBJS = $(patsubst %.c,%.o,$(wildcard src/*.c))
DATA = $(wildcard sql/$(EXTENSION)--*--*.sql)
DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql
EXTRA_CLEAN = results regression.diffs regression.out output_iso

PG_CPPFLAGS = -Isrc
PG_CFLAGS += -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers

# pg_regress: test/sql/*.sql, expected output in expected/ (top level).
REGRESS = $(patsubst test/sql/%.sql,%,$(sort $(wildcard test/sql/*.sql)))
REGRESS_OPTS = --inputdir=test --load-extension=$(EXTENSION)

# isolation tests: test/specs/*.spec, expected output in expected/.
ISOLATION = $(patsubst test/specs/%.spec,%,$(sort $(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test --load-extension=$(EXTENSION)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

sql/$(EXTENSION)--$(EXTVERSION).sql: sql/$(EXTENSION).sql
	cp $< $@
