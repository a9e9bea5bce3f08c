#!/usr/bin/env bash
# A third party's first steps, end to end, with the release host: scaffold a plugin into a
# folder outside the repository, build it, run its tests (which load the .so through the
# host's checks), load it with `plugboard check` through a manifest, and find its service
# in `plugboard services --json`.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
plugboard="$repo/.build/release/plugboard"
[ -x "$plugboard" ] || { echo "new-plugin.sh: $plugboard not found; run swift build -c release first" >&2; exit 1; }

work=$(mktemp -d /tmp/plugboard-e2e-newplugin-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

"$plugboard" new-plugin AcmeStorage --dir "$work/acme-storage"
(cd acme-storage && swift build -c release && swift test -c release)

library="$work/acme-storage/.build/release/libAcmeStorage.so"
cat > plugins.json <<JSON
{
  "schemaVersion": 1,
  "plugins": [
    { "name": "AcmeStorage", "path": "$library", "required": true }
  ]
}
JSON
"$plugboard" check --manifest plugins.json
services=$("$plugboard" services --manifest plugins.json --json)
echo "$services"
python3 - "$services" <<'PY'
import json, sys
rows = json.loads(sys.argv[1])
mine = [r for r in rows if r.get("owner") == "AcmeStorage"]
assert any(r.get("service") == "PlugboardAPI.ObjectStorage" for r in mine), f"no ObjectStorage from AcmeStorage in {rows}"
PY
echo "new-plugin end to end: scaffolded, built, tested, checked, and listed by plugboard services"
