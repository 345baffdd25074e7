#!/usr/bin/env bash
# Fails when a file tracked by git is a compiled binary: an ELF file, or an
# executable that is not a script (no #! line). Build output belongs in
# _output/ or the tool cache, never in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

bad=()
while IFS= read -r -d '' entry; do
  mode=${entry%% *}
  path=${entry#*$'\t'}
  [[ -f "$path" ]] || continue
  magic=$(head -c4 "$path" | od -An -c | tr -d ' \n')
  if [[ "$magic" == '177ELF' ]]; then
    bad+=("$path (ELF binary)")
  elif [[ "$mode" == 100755 && "$(head -c2 "$path")" != '#!' ]]; then
    bad+=("$path (executable without a #! line)")
  fi
done < <(git ls-files -s -z)

if ((${#bad[@]})); then
  echo "tracked files that look like build output; remove them (git rm --cached) and let .gitignore keep them out:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "no binaries tracked"
