# Helpers the bench scripts share (sourced by run-bench.sh and
# roots-bench.sh).

# median X...: the median of the numbers (the mean of the middle two when
# there is an even count).
median() {
  printf '%s\n' "$@" | sort -g |
    awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# ratio A B: A / B to two decimals, "?" when B is not positive.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'; }
