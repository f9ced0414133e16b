#!/usr/bin/env bash
# Vendor the icons the FSM site renderer inlines (fsm_sites/render/icons.py) from the
# lucide-static npm package (ISC licence) into fsm_sites/render/static/icons/.
# Run it by hand to re-vendor (needs npm and the network); the result is committed, so
# rendering never downloads anything. Usage: scripts/vendor_icons.sh [VERSION]
set -euo pipefail

VERSION="${1:-1.62.0}"
PACKAGE="lucide-static"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/fsm_sites/render/static/icons"

# The curated subset: every name fsm_sites/render/icons.py uses must be here (a test checks).
ICONS=(
  archive arrow-left arrow-left-right arrow-right banknote bell book-open bookmark briefcase
  calendar-days chart-column check chef-hat chevron-down chevron-left chevron-right
  circle-help clock credit-card download eye file-text flag folder funnel gift heart house
  image inbox info key-round landmark laptop lock log-in log-out mail map-pin
  menu message-square minus monitor moon music package pencil pin plane plus receipt
  refresh-cw repeat search send settings share-2 shield shopping-bag shopping-cart
  sliders-horizontal smartphone snowflake star store sun tag ticket trash-2 truck undo-2
  upload user user-plus users utensils volume-2 wallet x
)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$PACKAGE@$VERSION" >/dev/null)
tar -xzf "$work/$PACKAGE-$VERSION.tgz" -C "$work"

rm -rf "$DEST"
mkdir -p "$DEST"
for name in "${ICONS[@]}"; do
  src="$work/package/icons/$name.svg"
  if [[ ! -f "$src" ]]; then
    echo "vendor_icons: $PACKAGE $VERSION has no icon '$name'; pick another name" >&2
    exit 1
  fi
  cp "$src" "$DEST/$name.svg"
done
cp "$work/package/LICENSE" "$DEST/LICENSE"
license="$(node -p "require('$work/package/package.json').license")"
printf '%s %s %s\n' "$PACKAGE" "$VERSION" "$license" > "$DEST/VERSION"
echo "vendored ${#ICONS[@]} icons of $PACKAGE $VERSION ($license) into $DEST"
