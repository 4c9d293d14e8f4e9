#!/usr/bin/env bash
# Build a deniable-aggregator install of a git commit outside the repository (the baseline
# daemon of `bench/load_test.py --baseline-aggregator`) and print its console script's path.
#
#   bench/baseline_daemon.sh COMMIT [DIR]    DIR defaults to /tmp/deniable-baseline-<commit>
#
# DIR/src is `git archive` of the commit (no worktree is registered in the repository),
# DIR/venv a virtual environment with `pip install -e 'DIR/src[aggregator]'`. A DIR that
# already holds a build of the same commit is reused. Progress goes to stderr; stdout is
# the path alone, so that: BASE=$(bench/baseline_daemon.sh 9cea40c).
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || $1 == -h || $1 == --help ]]; then
    sed -n '2,10s/^# \{0,1\}//p' "$0" >&2
    exit 2
fi
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
commit=$(git -C "$repo" rev-parse --verify --quiet "$1^{commit}") || {
    echo "baseline_daemon.sh: $1 is not a commit of $repo" >&2
    exit 2
}
dir=$(realpath -m "${2:-/tmp/deniable-baseline-${commit:0:7}}")
case "$dir/" in
"$repo"/*)
    echo "baseline_daemon.sh: $dir is inside the repository; choose a folder outside it" >&2
    exit 2
    ;;
esac
script=$dir/venv/bin/deniable-aggregator
if [[ -x $script && -f $dir/COMMIT && $(cat "$dir/COMMIT") == "$commit" ]]; then
    echo "baseline_daemon.sh: reusing the build of ${commit:0:7} in $dir" >&2
    echo "$script"
    exit 0
fi
if [[ -e $dir && ! -f $dir/COMMIT && -n $(ls -A "$dir") ]]; then
    echo "baseline_daemon.sh: $dir exists, is not empty and is not a baseline build" >&2
    exit 2
fi
rm -rf "$dir/src" "$dir/venv" "$dir/COMMIT"
mkdir -p "$dir/src"
echo "baseline_daemon.sh: ${commit:0:7} into $dir/src" >&2
git -C "$repo" archive --format=tar "$commit" | tar -x -C "$dir/src"
echo "baseline_daemon.sh: a venv in $dir/venv, pip install -e '.[aggregator]'" >&2
"${PYTHON:-python3}" -m venv "$dir/venv"
"$dir/venv/bin/python" -m pip install --quiet --upgrade pip >&2
"$dir/venv/bin/python" -m pip install --quiet -e "$dir/src[aggregator]" >&2
"$script" --help >/dev/null
echo "$commit" >"$dir/COMMIT"
echo "$script"
