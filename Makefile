# libconvert: non-recursive GNU Make, out-of-tree build.
#   make            tools and libconvert.a in $(BUILD)
#   make check      bootstrap deps, then unit, CLI, oracle, NEON (qemu) and short fuzz tests
#   make check-clang  the same tests (no fuzz) built with clang in build/clang
#   make check-layers DESIGN.md's layer rule over the sources (scripts/check-layers.py)
#   make asan       the same tests built with ASan+UBSan in build/asan
#   make tsan       threaded conversions under ThreadSanitizer in build/tsan
#   make demo       run the tools end to end on a bundled example
#   make bench      speed and memory against cp/memcpy and the Python peers
#   make fuzz       every libFuzzer harness for FUZZ_SECONDS each
#   make check-llama  llama.cpp (llama-cpp-python, built once) judges our GGUFs
#   make check-neon   quant/'s tests cross-built for AArch64 (NEON), run under qemu-user
#   make CUDA=1       the same with the CUDA back end (quant/cuda/, nvcc), in build/cuda
#   make check-cuda   the CUDA back end on a GPU (skips, saying why, without one)
#   make bench-cuda   GB/s of the CUDA back end beside the CPU and the copy bound (GPU)
#   make install PREFIX=/usr/local
#   make shared     build/pic/libconvert.so, the library the Python package loads
#   make wheel      the Python package (python/) as a wheel in build/wheel
# A bare `make` builds every tool: the CUDA fatbin's rule below comes first in the file.
.DEFAULT_GOAL := all
CUDA    ?= 0
# A CUDA=1 build has other flags on every object: it lives in a folder of its own.
BUILD   ?= $(if $(filter 1,$(CUDA)),build/cuda,build)
OPT     ?= -O2 -g
WERROR  ?= 1
PREFIX  ?= /usr/local
FUZZ_SECONDS ?= 60
CHECK_FUZZ_SECONDS ?= 15
# fuzz_rows re-runs the quantizers fuzz_quant covers, by their row entries: a short look.
CHECK_FUZZ_ROWS_SECONDS ?= 4
VENV    := build/venv
PY      := $(VENV)/bin/python
O       := $(BUILD)/obj
Q       := $(if $(V),,@)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wformat=2 \
        -Wpointer-arith -Wundef -Wwrite-strings -Wcast-qual -Wno-missing-field-initializers
# Our flags live in XFLAGS so that a user's CFLAGS=... adds to them.
XFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -I. -MMD -MP -ffp-contract=off $(OPT) $(WARN) \
          $(if $(filter 1,$(WERROR)),-Werror) \
          $(if $(SAN),-fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer)
XLDFLAGS := $(if $(SAN),-fsanitize=$(SAN))
LDLIBS  += -lcjson -lz -lpthread -lm

# The portable library: the top of each folder. ISA-specific code never sits there.
LIB_SRC := $(sort $(wildcard libconvert/*.c arch/*.c formats/*.c quant/*.c hf/*.c infer/*.c jobs/*.c))

# ISA-specific kernels live in one folder per ISA (quant/avx2/, ...). Each folder is
# added by its own line below: built only for its architecture, every file in it with
# the folder's flags, and, when it holds any source, LC_HAVE_<ISA> is defined for the
# whole build so that quant/dispatch.c offers its table (after asking libconvert/cpu.h).
#   $(call isa_folder,FOLDER,MACRO,FLAGS)
define isa_folder
ISA_SRC += $$(sort $$(wildcard $(1)/*.c))
XFLAGS  += $$(if $$(wildcard $(1)/*.c),-D$(2)=1)
$$(O)/$(1)/%.o: XFLAGS += $(3)
endef
ISA_SRC :=
MACHINE := $(shell $(CC) -dumpmachine)
ifneq ($(findstring x86_64,$(MACHINE)),)
$(eval $(call isa_folder,quant/avx2,LC_HAVE_AVX2,-mavx2 -mfma -mf16c))
$(eval $(call isa_folder,quant/avx512,LC_HAVE_AVX512,-mavx512f -mavx512bw -mavx512vl -mavx2 -mfma -mf16c))
endif
ifneq ($(findstring aarch64,$(MACHINE)),)
$(eval $(call isa_folder,quant/neon,LC_HAVE_NEON,))
endif

# CUDA (CUDA=1): quant/cuda/ is an ISA folder too, its C files built by $(CC) with the
# toolkit's headers (the driver is loaded at run time: nothing links against CUDA), and
# kernels.cu built by nvcc into a fatbin that quant/cuda/fatbin.c embeds. The device
# arithmetic must be the reference's (quant/cuda/block_ops.h): no FMA contraction, IEEE
# division and square root, subnormals kept, no fast math; check-ptx holds the PTX to it.
CUDA_HOME  ?= /usr/local/cuda
NVCC       ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
NVCC_EXACT := -fmad=false -prec-div=true -prec-sqrt=true -ftz=false
NVCC_FLAGS := -std=c++17 -O2 -I. $(NVCC_EXACT) --Werror all-warnings \
              -Xcompiler -ffp-contract=off,-Wall,-Wextra,-Werror
# sm_80, sm_90 and the newest architecture this nvcc knows, as SASS, and compute_80 PTX
# that the driver compiles for any later GPU.
CUDA_NEWEST = $(shell $(NVCC) --list-gpu-arch 2>/dev/null | sed -n 's/^compute_//p' | sort -n | tail -1)
CUDA_ARCHS ?= 80 90 $(CUDA_NEWEST)
CUDA_PTX   ?= 80
CUDA_GENCODE = $(foreach a,$(sort $(CUDA_ARCHS)),-gencode arch=compute_$(a),code=sm_$(a)) \
               -gencode arch=compute_$(CUDA_PTX),code=compute_$(CUDA_PTX)
CUDA_FATBIN := $(O)/quant/cuda/kernels.fatbin
ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error CUDA=1 needs nvcc: none in $(CUDA_HOME)/bin or on PATH (set CUDA_HOME or NVCC))
endif
$(eval $(call isa_folder,quant/cuda,LC_HAVE_CUDA,-isystem $(CUDA_HOME)/include))
LDLIBS += -ldl
# The emulation runs the device's arithmetic (x86's NaN results rewritten, as on a GPU).
$(O)/quant/cuda/emulate.o: XFLAGS += -DLC_CU_NANFIX
$(O)/quant/cuda/fatbin.o: XFLAGS += -DLC_CUDA_FATBIN='"$(CUDA_FATBIN)"'
$(O)/quant/cuda/fatbin.o: $(CUDA_FATBIN)
endif
$(CUDA_FATBIN): quant/cuda/kernels.cu quant/cuda/block_ops.h quant/blocks.h quant/types.h
	@mkdir -p $(@D)
	$(Q)$(NVCC) --fatbin $(NVCC_FLAGS) $(CUDA_GENCODE) -o $@ $<

LIB_OBJ := $(LIB_SRC:%.c=$(O)/%.o) $(ISA_SRC:%.c=$(O)/%.o)
TOOLS   := $(patsubst cmd/%.c,%,$(wildcard cmd/*.c))
BINS    := $(TOOLS:%=$(BUILD)/bin/%)
UNIT_SRC := $(wildcard tests/unit/*.c)
# Small test-only drivers (tests/tools/NAME.c -> $(BUILD)/test-bin/NAME) that the
# oracle tests feed with data made by the real producers.
TEST_TOOLS := $(patsubst tests/tools/%.c,$(BUILD)/test-bin/%,$(wildcard tests/tools/*.c))
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
# Installed headers: every header but the private ones (*_impl.h, and those
# scripts/check-layers.py lists as private to their folder).
PRIVATE_H := quant/lanes.h quant/iq_tables.h arch/families.h hf/json.h hf/vocab.h \
             hf/bpe.h hf/special.h \
             hf/naming.h hf/weights.h infer/matmul.h
HEADERS := $(filter-out %_impl.h $(PRIVATE_H),$(wildcard libconvert/*.h arch/*.h formats/*.h quant/*.h hf/*.h infer/*.h jobs/*.h))

.PHONY: all tools check test-unit test-cli test-py test-fuzz-short asan ubsan tsan demo bench fuzz \
        install clean bootstrap check-llama check-clang check-layers check-neon \
        test-cuda-host check-ptx check-cuda bench-cuda shared wheel

# Keep the objects of tools and test drivers: they are intermediates of pattern rules,
# which make would otherwise delete (and rebuild on the next run).
.SECONDARY:

all: tools $(BUILD)/libconvert.a
tools: $(BINS) $(TEST_TOOLS)

$(O)/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(XFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/libconvert.a: $(LIB_OBJ)
	$(Q)rm -f $@; $(AR) rcs $@ $^

# libconvert.so, for the Python package (python/): the library's sources built again
# with -fPIC in a folder of their own, $(BUILD)/pic, by this Makefile run with O there
# (so every per-folder flag above applies), leaving the tools' objects as they are.
PIC := $(BUILD)/pic
shared:
	$(Q)$(MAKE) --no-print-directory O=$(PIC) CFLAGS='$(CFLAGS) -fPIC' $(PIC)/libconvert.so
$(O)/libconvert.so: $(LIB_OBJ)
	$(Q)$(CC) -shared $(XLDFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The Python package as a wheel in $(BUILD)/wheel: python/'s own build backend
# (python/_build/backend.py) runs `make shared` and packs the .so beside the modules.
wheel: bootstrap
	$(Q)rm -rf $(BUILD)/wheel
	$(Q)LC_MAKE_ARGS='BUILD=$(BUILD)' $(PY) -m pip wheel -q --no-deps --disable-pip-version-check \
	    -w $(BUILD)/wheel ./python
	$(Q)ls $(BUILD)/wheel/*.whl

$(BUILD)/bin/%: $(O)/cmd/%.o $(BUILD)/libconvert.a
	@mkdir -p $(@D)
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/test-bin/%: $(O)/tests/tools/%.o $(BUILD)/libconvert.a
	@mkdir -p $(@D)
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Criterion tests: one binary for every tests/unit/*.c.
$(BUILD)/unit-tests: $(UNIT_SRC:%.c=$(O)/%.o) $(BUILD)/libconvert.a
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) $^ -lcriterion $(LDLIBS) -o $@
$(O)/tests/unit/%.o: XFLAGS += -Wno-missing-prototypes -D_DEFAULT_SOURCE

bootstrap:
	$(Q)scripts/bootstrap.sh

check: bootstrap check-layers
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/unit-tests
	$(Q)$(MAKE) --no-print-directory test-unit test-cli test-py
	$(Q)$(MAKE) --no-print-directory test-cuda-host check-ptx
	$(Q)$(MAKE) --no-print-directory check-neon
	$(Q)$(MAKE) --no-print-directory test-fuzz-short

test-unit: $(BUILD)/unit-tests
	$(Q)LC_FIXTURES=fixtures $(BUILD)/unit-tests --jobs 2

test-cli: tools
	$(Q)LC_BIN=$(BUILD)/bin scripts/run-cli-tests.sh tests/cli

PY_TESTS := $(wildcard tests/integration/test_*.py)
# Every pytest run: no cache folder in the tree, and the temporary folders of the tests
# that passed removed when the run ends (pytest keeps its last three runs' folders
# otherwise: CI runs pytest five times, and check-llama's big-model splits alone write
# gigabytes, which filled a CI machine's disk in the middle of check-llama).
PYTEST_OPTS := -p no:cacheprovider -o tmp_path_retention_policy=failed
# The Python package's tests (test_python*.py) load $(PIC)/libconvert.so into the venv's
# python. In a sanitizer build that library is instrumented and python is not: its
# runtime is preloaded into python for them (its leaks are not ours: detect_leaks=0).
PY_PKG_TESTS := $(wildcard tests/integration/test_python*.py)
comma := ,
SAN_RUNTIME = $(foreach s,$(subst $(comma), ,$(SAN)),\
    $(shell $(CC) -print-file-name=lib$(if $(filter address,$(s)),asan,$(if $(filter thread,$(s)),tsan,ubsan)).so))
test-py: tools shared
	$(Q)LC_BIN=$(abspath $(BUILD)/bin) LC_TEST_BIN=$(abspath $(BUILD)/test-bin) \
	    LIBCONVERT_LIBRARY=$(abspath $(PIC)/libconvert.so) $(PY) -m pytest -q \
	    $(PYTEST_OPTS) $(if $(SAN),$(filter-out $(PY_PKG_TESTS),$(PY_TESTS)),$(PY_TESTS))
	$(Q)$(if $(SAN),LC_BIN=$(abspath $(BUILD)/bin) LC_TEST_BIN=$(abspath $(BUILD)/test-bin) \
	    LIBCONVERT_LIBRARY=$(abspath $(PIC)/libconvert.so) LD_PRELOAD='$(strip $(SAN_RUNTIME))' \
	    ASAN_OPTIONS=detect_leaks=0 $(PY) -m pytest -q $(PYTEST_OPTS) $(PY_PKG_TESTS))

# Who may include and call whom: the one table is at the top of the script.
check-layers:
	$(Q)python3 scripts/check-layers.py

# Every build and test of check, compiled by clang in its own folder, so that a
# break only one compiler sees cannot land (the short fuzz is clang already).
check-clang: bootstrap
	$(Q)$(MAKE) --no-print-directory CC=clang BUILD=build/clang all build/clang/unit-tests
	$(Q)$(MAKE) --no-print-directory CC=clang BUILD=build/clang test-unit test-cli test-py

# llama.cpp as the judge: its own venv (scripts/bootstrap-llama.sh builds the wheel once).
check-llama: bootstrap
	$(Q)scripts/bootstrap-llama.sh
	$(Q)$(MAKE) --no-print-directory tools
	$(Q)$(MAKE) --no-print-directory shared
	$(Q)LC_BIN=$(abspath $(BUILD)/bin) LC_TEST_BIN=$(abspath $(BUILD)/test-bin) \
	    LIBCONVERT_LIBRARY=$(abspath $(PIC)/libconvert.so) \
	    build/llama-venv/bin/python -m pytest -q -rs \
	    $(PYTEST_OPTS) tests/llama

# quant/'s unit tests alone (the kernels and the variant comparisons), linked from the
# library folders quant/ stands on, so that a cross build needs no cJSON or zlib.
QUANT_TEST_SRC := $(wildcard tests/unit/test_quant*.c)
QUANT_LIB_SRC  := $(sort $(wildcard libconvert/*.c arch/*.c quant/*.c))
QUANT_TEST_LIBS ?= -lcriterion
$(BUILD)/quant-tests: $(QUANT_TEST_SRC:%.c=$(O)/%.o) $(QUANT_LIB_SRC:%.c=$(O)/%.o) \
                      $(ISA_SRC:%.c=$(O)/%.o)
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) $^ $(QUANT_TEST_LIBS) -lpthread -lm -o $@

# NEON: Debian's AArch64 cross gcc builds build/neon/quant-tests (quant/neon/ included, as
# on any AArch64 target), qemu-user runs it with Criterion's arm64 runtime from
# build/neon/sysroot (scripts/bootstrap-neon.sh). Every NEON kernel is compared with the
# reference built for AArch64; none is skipped.
NEON_CC      ?= aarch64-linux-gnu-gcc
NEON_SYSROOT := build/neon/sysroot
NEON_LIBDIRS := $(NEON_SYSROOT)/usr/lib/aarch64-linux-gnu:$(NEON_SYSROOT)/lib/aarch64-linux-gnu
check-neon:
	$(Q)scripts/bootstrap-neon.sh
	$(Q)$(MAKE) --no-print-directory CC=$(NEON_CC) BUILD=build/neon \
	    CFLAGS='-isystem build/neon/include' \
	    QUANT_TEST_LIBS='-L$(NEON_SYSROOT)/usr/lib/aarch64-linux-gnu -l:libcriterion.so.3 -Wl,-rpath-link,$(NEON_LIBDIRS)' \
	    build/neon/quant-tests
	$(Q)LC_FIXTURES=fixtures scripts/run-neon-tests.sh build/neon/quant-tests --jobs 2

# ---- the CUDA back end without a GPU ----
# tests/cuda/: quant/cuda/block_ops.h compiled by nvcc for the host, twice (the host's
# float operations, and the device's NaN rewriting), against the CPU reference: the
# variant tests of tests/unit/test_quant_variants.c plus the element conversions. Built
# in every build where nvcc is found (it links the CUDA runtime statically, for nvcc's
# registration code only: it runs without a GPU or a driver).
CUDA_HOST_OBJ := $(O)/tests/cuda/quant_variants.o $(O)/tests/cuda/test_cuda_host.o \
                 $(O)/tests/cuda/host_cuhost.o $(O)/tests/cuda/host_cunanfix.o
$(O)/tests/cuda/host_%.o: tests/cuda/host.cu quant/cuda/block_ops.h quant/blocks.h quant/types.h
	@mkdir -p $(@D)
	$(Q)$(NVCC) -x cu -c $(NVCC_FLAGS) -DLC_CU_VARIANT=$* \
	    $(if $(filter cunanfix,$*),-DLC_CU_NANFIX) -o $@ $<
$(O)/tests/cuda/quant_variants.o: tests/unit/test_quant_variants.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(XFLAGS) $(CFLAGS) -DLC_TEST_VARIANTS=lc_test_cuda_variants -c $< -o $@
$(O)/tests/cuda/%.o: XFLAGS += -Wno-missing-prototypes -D_DEFAULT_SOURCE
$(BUILD)/cuda-host-tests: $(CUDA_HOST_OBJ) $(QUANT_LIB_SRC:%.c=$(O)/%.o) $(ISA_SRC:%.c=$(O)/%.o)
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) $^ -lcriterion -L$(CUDA_HOME)/lib64 -lcudart_static \
	    -ldl -lrt -lpthread -lm -o $@
test-cuda-host:
ifeq ($(NVCC),)
	@echo "cuda-host: skipped: no nvcc in $(CUDA_HOME)/bin or on PATH (the CUDA back end's arithmetic is not checked)"
else
	$(Q)$(MAKE) --no-print-directory $(BUILD)/cuda-host-tests
	$(Q)LC_FIXTURES=fixtures $(BUILD)/cuda-host-tests --jobs 2
endif

# The PTX of every architecture the fatbin holds, against block_ops.h's rule 1.
check-ptx:
ifeq ($(NVCC),)
	@echo "check-ptx: skipped: no nvcc in $(CUDA_HOME)/bin or on PATH"
else
	@mkdir -p $(O)/quant/cuda
	$(Q)for a in $(sort $(CUDA_ARCHS) $(CUDA_PTX)); do \
	    $(NVCC) -ptx $(NVCC_FLAGS) -arch=compute_$$a -o $(O)/quant/cuda/kernels.$$a.ptx \
	        quant/cuda/kernels.cu || exit 1; done
	$(Q)python3 scripts/check-ptx.py $(foreach a,$(sort $(CUDA_ARCHS) $(CUDA_PTX)),$(O)/quant/cuda/kernels.$(a).ptx)
endif

# ---- the CUDA back end on a GPU ----
# check-cuda: every kernel against the CPU reference on the device (lc-cuda-check, and the
# variant tests of test_quant_variants.c with the device table, LC_TEST_REQUIRE_CUDA=1 so
# that it cannot skip), whole files of every TYPE and out type identical to the CPU's
# (test_device.py on the device, LC_TEST_DEVICE_REAL=1), and lc-cuda-check under
# compute-sanitizer memcheck and racecheck. Without a device: one line saying why, exit 0.
CUDA_SANITIZER ?= $(firstword $(wildcard $(CUDA_HOME)/bin/compute-sanitizer) $(shell command -v compute-sanitizer 2>/dev/null))
check-cuda: bootstrap
	$(Q)$(MAKE) --no-print-directory CUDA=1 all build/cuda/unit-tests
	$(Q)if ! why=$$(build/cuda/test-bin/lc-cuda-check probe); then \
	    echo "check-cuda: skipped: $$why"; exit 0; fi; \
	echo "check-cuda: $$why" && \
	build/cuda/test-bin/lc-cuda-check kernels && \
	LC_TEST_REQUIRE_CUDA=1 LC_FIXTURES=fixtures build/cuda/unit-tests --jobs 1 \
	    --filter 'quant_variants/*' && \
	LC_TEST_DEVICE_REAL=1 LC_BIN=$(abspath build/cuda/bin) $(PY) -m pytest -q \
	    $(PYTEST_OPTS) tests/integration/test_device.py && \
	if [ -z "$(CUDA_SANITIZER)" ]; then \
	    echo "check-cuda: FAILED: no compute-sanitizer (set CUDA_SANITIZER)"; exit 1; fi && \
	$(CUDA_SANITIZER) --tool memcheck --error-exitcode 1 --leak-check full \
	    build/cuda/test-bin/lc-cuda-check kernels 65536 && \
	$(CUDA_SANITIZER) --tool racecheck --error-exitcode 1 \
	    build/cuda/test-bin/lc-cuda-check kernels 65536 && \
	echo "check-cuda: passed on the device"

bench-cuda: bootstrap
	$(Q)$(MAKE) --no-print-directory CUDA=1 tools
	$(Q)LC_BIN=build/cuda/bin LC_TEST_BIN=build/cuda/test-bin PY=$(PY) scripts/bench-cuda.sh

# The sanitizer runs skip the short fuzz (check's own clang build covers it).
asan: bootstrap
	$(Q)$(MAKE) --no-print-directory BUILD=build/asan SAN=address,undefined \
	    OPT='-O1 -g' all build/asan/unit-tests
	$(Q)$(MAKE) --no-print-directory BUILD=build/asan SAN=address,undefined OPT='-O1 -g' \
	    test-unit test-cli test-py
# The threaded paths under ThreadSanitizer (tools only: see scripts/run-tsan.sh).
tsan: all
	$(Q)$(MAKE) --no-print-directory BUILD=build/tsan SAN=thread OPT='-O1 -g' tools
	$(Q)LC_BIN=$(BUILD)/bin TSAN_BIN=build/tsan/bin scripts/run-tsan.sh

ubsan: bootstrap
	$(Q)$(MAKE) --no-print-directory BUILD=build/ubsan SAN=undefined all build/ubsan/unit-tests
	$(Q)$(MAKE) --no-print-directory BUILD=build/ubsan SAN=undefined test-unit test-cli test-py

# libFuzzer harnesses, built by clang with ASan+UBSan over the library sources.
comma := ,
FUZZ_CC    ?= clang
FUZZ_FLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I. -g -O1 -ffp-contract=off \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_BINS  := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
# Portable sources only (LIB_SRC, no ISA folder): FUZZ_FLAGS has no ISA flags. The
# library is compiled once (coverage and sanitizers, libFuzzer's main left out) and
# linked into every harness.
FUZZ_OBJ   := $(LIB_SRC:%.c=build/fuzz/obj/%.o)
build/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(subst fuzzer$(comma),fuzzer-no-link$(comma),$(FUZZ_FLAGS)) -MMD -MP \
	    -c $< -o $@
build/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_OBJ) $< $(LDLIBS) -o $@
-include $(wildcard $(FUZZ_OBJ:.o=.d))

fuzz: $(FUZZ_BINS)
	$(Q)LC_FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/run-fuzz.sh $(FUZZ_BINS)
test-fuzz-short: $(FUZZ_BINS)
	$(Q)LC_FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS) scripts/run-fuzz.sh $(filter-out build/fuzz/fuzz_rows,$(FUZZ_BINS))
	$(Q)LC_FUZZ_SECONDS=$(CHECK_FUZZ_ROWS_SECONDS) scripts/run-fuzz.sh build/fuzz/fuzz_rows

demo: bootstrap
	$(Q)$(MAKE) --no-print-directory tools
	$(Q)LC_BIN=$(BUILD)/bin scripts/demo.sh

bench: bootstrap
	$(Q)$(MAKE) --no-print-directory tools $(TEST_TOOLS)
	$(Q)LC_BIN=$(BUILD)/bin LC_TEST_BIN=$(BUILD)/test-bin PY=$(PY) scripts/bench.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(BUILD)/libconvert.a $(DESTDIR)$(PREFIX)/lib/
	for h in $(HEADERS); do install -D -m 644 $$h $(DESTDIR)$(PREFIX)/include/libconvert/$$h; done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBS@|$(strip $(LDLIBS))|' \
	    -e 's|@VERSION@|$(shell sed -n 's/.*LC_VERSION "\(.*\)"/\1/p' libconvert/version.h)|' \
	    scripts/libconvert.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libconvert.pc

clean:
	rm -rf $(BUILD)/obj $(BUILD)/bin $(BUILD)/asan $(BUILD)/ubsan $(BUILD)/fuzz \
	    $(BUILD)/clang $(BUILD)/libconvert.a $(BUILD)/unit-tests $(BUILD)/cuda-host-tests \
	    $(BUILD)/pic $(BUILD)/wheel

-include $(shell find $(O) -name '*.d' 2>/dev/null)
