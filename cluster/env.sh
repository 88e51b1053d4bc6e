#!/usr/bin/env bash
# Process environment for attnlab runs: which OpenBLAS kernel (OPENBLAS_CORETYPE) this CPU gets.
#
# Debian 12's OpenBLAS 0.3.21 chooses its kernels at start-up from CPUID. Under some hypervisors it
# misreads AVX2 and AVX-512 machines and falls back to its Prescott (SSE3) kernels, which run GEMM
# 3-5x slower. Naming the kernel from the CPU flags the Linux kernel reports avoids that; where the
# detection works, the name given here is the one OpenBLAS would have chosen. A value the user has
# already set always wins.
#
#   source cluster/env.sh     export OPENBLAS_CORETYPE, unless it is set or no kernel fits
#   bash cluster/env.sh       print the kernel name this CPU gets (nothing if none fits)

# attnlab_openblas_coretype [CPUINFO]: prints SkylakeX, Zen, Haswell or nothing.
attnlab_openblas_coretype() {
  local cpuinfo=${1:-/proc/cpuinfo}
  [[ -r $cpuinfo ]] || return 0
  local flags vendor flag
  flags=" $(grep -m1 '^flags' "$cpuinfo" | cut -d: -f2) "
  vendor=$(grep -m1 '^vendor_id' "$cpuinfo" | cut -d: -f2 | tr -d '[:space:]')

  # OpenBLAS's SkylakeX kernels use AVX-512 F, BW, DQ and VL.
  local avx512=yes
  for flag in avx512f avx512bw avx512dq avx512vl; do
    [[ $flags == *" $flag "* ]] || avx512=no
  done
  if [[ $avx512 == yes ]]; then
    echo SkylakeX
  elif [[ $flags == *" avx2 "* && $flags == *" fma "* ]]; then
    # Zen runs the Haswell kernels with blocking sizes tuned for AMD caches.
    if [[ $vendor == AuthenticAMD || $vendor == HygonGenuine ]]; then
      echo Zen
    else
      echo Haswell
    fi
  fi
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  attnlab_openblas_coretype "$@"
elif [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  attnlab_coretype_detected=$(attnlab_openblas_coretype)
  if [[ -n $attnlab_coretype_detected ]]; then
    export OPENBLAS_CORETYPE=$attnlab_coretype_detected
  fi
  unset attnlab_coretype_detected
fi
