# Shared by npm start and npm test: install the npm dependencies when the lockfile changed.
# shellcheck shell=bash
ensure_node_modules() {
  local root="$1" stamp="$1/node_modules/.tickwork-lock-sha" want
  want="$(sha256sum "$root/package-lock.json" | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "==> installing npm dependencies (npm ci)"
    (cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" >"$stamp"
  fi
}
