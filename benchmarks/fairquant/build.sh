#!/usr/bin/env bash
# Build FairQuant (Kim, Wang, Wang, "FairQuant: certifying and quantifying fairness of deep neural networks",
# ICSE 2025) outside this package, from its public artifact at a named commit, for benchmarks/certify_people.py and
# benchmarks/certify.py (--fairquant DEST/FairQuant/network_test).
#
#   benchmarks/fairquant/build.sh [DEST]            (default DEST: /tmp/fairquant)
#
# Environment:
#   FAIRQUANT_GIT      where to clone from (default https://github.com/briankim113/FairQuant-Artifact.git; a local
#                      mirror or clone of it works too)
#   FAIRQUANT_TIMEOUT  its wall-second budget, compiled in (network_test.c's TIMEOUT; default 60)
#   PYTHON             a Python whose numpy ships OpenBLAS (default: python3), used only when no system OpenBLAS
#
# FairQuant calls OpenBLAS's cblas_sgemm and openblas_set_num_threads only. With a system OpenBLAS (libopenblas-dev)
# it is linked as the artifact's makefile does; otherwise against the OpenBLAS that numpy's wheel ships
# (libscipy_openblas64_, whose symbols carry a prefix and a 64-bit suffix), through a small cblas.h written here that
# renames the two functions. Nothing of FairQuant's source is changed but TIMEOUT.
set -euo pipefail

COMMIT=eab99345504c2ef36931c46e1b42f25ec434d31c   # briankim113/FairQuant-Artifact, "Update README.md"
DEST=${1:-/tmp/fairquant}
GIT=${FAIRQUANT_GIT:-https://github.com/briankim113/FairQuant-Artifact.git}
TIMEOUT=${FAIRQUANT_TIMEOUT:-60}
PY=${PYTHON:-python3}

mkdir -p "$DEST"
if [ ! -d "$DEST/source.git" ]; then
    git clone --quiet --bare "$GIT" "$DEST/source.git"
fi
rm -rf "$DEST/FairQuant"
git --git-dir="$DEST/source.git" archive "$COMMIT" FairQuant | tar -x -C "$DEST"
cd "$DEST/FairQuant"
sed -i "s/long int TIMEOUT = 1800;/long int TIMEOUT = ${TIMEOUT};/" network_test.c
grep -q "long int TIMEOUT = ${TIMEOUT};" network_test.c

if echo 'int main(void){return 0;}' | gcc -x c - -lopenblas -o /dev/null 2>/dev/null \
        && [ -e /usr/include/cblas.h -o -e /usr/include/x86_64-linux-gnu/cblas.h -o -e /usr/include/openblas/cblas.h ]; then
    INCLUDE=$(dirname "$(ls /usr/include/x86_64-linux-gnu/cblas.h /usr/include/openblas/cblas.h /usr/include/cblas.h \
        2>/dev/null | head -1)")
    make all CFLAGS="-O3 -I${INCLUDE}" LDFLAGS="-O3 -lopenblas -lm"
    echo "linked against the system OpenBLAS"
else
    LIBDIR=$("$PY" -c "import numpy, os; print(os.path.join(os.path.dirname(os.path.dirname(numpy.__file__)), 'numpy.libs'))")
    LIB=$(ls "$LIBDIR"/libscipy_openblas64_*.so | head -1)
    mkdir -p shim
    cat > shim/cblas.h <<'EOF'
/* The two OpenBLAS functions FairQuant calls, under the names numpy's bundled OpenBLAS (ILP64) gives them. */
#ifndef FAIRQUANT_CBLAS_SHIM_H
#define FAIRQUANT_CBLAS_SHIM_H
#include <stdint.h>
enum CBLAS_ORDER {CblasRowMajor = 101, CblasColMajor = 102};
enum CBLAS_TRANSPOSE {CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113};
void scipy_cblas_sgemm64_(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int64_t M, int64_t N,
                          int64_t K, float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                          float beta, float *C, int64_t ldc);
void scipy_openblas_set_num_threads64_(int n);
#define cblas_sgemm scipy_cblas_sgemm64_
#define openblas_set_num_threads scipy_openblas_set_num_threads64_
#endif
EOF
    make all CFLAGS="-O3 -I$(pwd)/shim" LDFLAGS="-O3 ${LIB} -Wl,-rpath,$(dirname "$LIB") -lm"
    echo "linked against numpy's OpenBLAS: ${LIB}"
fi
./network_test 2>&1 | head -3 || true
echo "built: $DEST/FairQuant/network_test (FairQuant-Artifact ${COMMIT}, TIMEOUT ${TIMEOUT} s)"
