#!/usr/bin/env bash
# Runs the shell blocks of the README's "Try it" section and of
# docs/getting-started.md, in order, as a reader pasting them would: each
# document in one shell session, in a fresh copy of the checkout (so a
# fresh ./herald build and an empty ./data), and fails when a command of a
# block fails. It needs port 4437 free, curl and jq.
#
# What the runner adds to the blocks, so that they stay as a reader pastes
# them:
#   - every curl fails on an HTTP error answer (--fail-with-body), so a 4xx
#     or 5xx a reader would see fails the run;
#   - a command whose comment ends in "Ctrl-C to stop" runs for 5 s and
#     is then stopped, as a reader would stop it;
#   - background jobs (servers, listeners, consumers) are stopped at the end.
#
# Usage: scripts/doctest.sh [FILE...]   (default: README.md docs/getting-started.md)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

for tool in curl jq go; do
  command -v "$tool" >/dev/null 2>&1 || { echo "scripts/doctest.sh: $tool is not on PATH; install it and run again" >&2; exit 1; }
done
if (exec 3<>/dev/tcp/127.0.0.1/4437) 2>/dev/null; then
  echo "scripts/doctest.sh: something already listens on 127.0.0.1:4437, the port the documents use; stop it and run again" >&2
  exit 1
fi

# blocks prints the runnable script of one document: its ```sh blocks
# (for README.md, those of the "Try it" section only), each preceded by
# an echo naming the document and line.
blocks() {
  awk -v file="$1" '
    /^## / { section = substr($0, 4) }
    file ~ /README\.md$/ && section != "Try it" { next }
    /^```sh$/ { inblock = 1; printf "echo %s\n", "\"== " file ":" NR "\""; next }
    /^```$/ && inblock { inblock = 0; next }
    inblock {
      line = $0
      if (line ~ /#[^#]*Ctrl-C to stop$/) {
        sub(/[ \t]*#[^#]*Ctrl-C to stop$/, "", line)
        line = "timeout 5 " line " || [ $? -eq 124 ]"
      }
      print line
    }
  ' "$1"
}

status=0
for doc in "${@:-README.md docs/getting-started.md}"; do
  for f in $doc; do
    work=$(mktemp -d)
    git ls-files -z | xargs -0 cp --parents -t "$work"
    script="$work/.doctest.sh"
    {
      echo 'set -eo pipefail'
      echo 'curl() { case " $* " in *" -f"* | *" --fail"*) command curl "$@" ;; *) command curl --fail-with-body "$@" ;; esac; }'
      echo 'trap '"'"'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true'"'"' EXIT'
      blocks "$f"
    } >"$script"
    echo "=== $f (in $work)"
    if (cd "$work" && timeout 600 bash "$script"); then
      echo "=== $f: every block ran"
      rm -rf "$work"
    else
      echo "=== $f: FAILED (the script is $script)" >&2
      status=1
    fi
  done
done
exit $status
