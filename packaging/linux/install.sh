#!/bin/sh
# Install fxstudio's desktop entry and icon for the current user, in the XDG data folder
# (${XDG_DATA_HOME:-~/.local/share}): applications/fxstudio.desktop and icons/hicolor/.../fxstudio.*
#
#   packaging/linux/install.sh [BINARY]    the launcher runs BINARY; without it, the bundle
#                                          dist/fxstudio/fxstudio when built, else `fxstudio` on PATH
#   packaging/linux/install.sh --uninstall remove what the install wrote
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${XDG_DATA_HOME:-"$HOME/.local/share"}
apps="$data/applications"
icons="$data/icons/hicolor"
desktop="$apps/fxstudio.desktop"

refresh() {
    # Launchers notice new entries by themselves on most desktops; these make it immediate.
    if command -v update-desktop-database >/dev/null 2>&1; then update-desktop-database -q "$apps" || true; fi
    if command -v gtk-update-icon-cache >/dev/null 2>&1; then gtk-update-icon-cache -q -t "$icons" || true; fi
}

if [ "${1:-}" = "--uninstall" ]; then
    rm -f "$desktop" "$icons/256x256/apps/fxstudio.png" "$icons/scalable/apps/fxstudio.svg"
    refresh
    echo "removed fxstudio's desktop entry and icon from $data"
    exit 0
fi

if [ $# -ge 1 ]; then
    binary=$1
elif [ -x "$root/dist/fxstudio/fxstudio" ]; then
    binary="$root/dist/fxstudio/fxstudio"
elif command -v fxstudio >/dev/null 2>&1; then
    binary=$(command -v fxstudio)
else
    echo "install.sh: no fxstudio found: build the bundle (make bundle), put fxstudio on PATH, or name the binary" >&2
    exit 2
fi
if [ ! -x "$binary" ]; then
    echo "install.sh: $binary is not an executable file" >&2
    exit 2
fi
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")  # launchers need an absolute path

# The desktop entry spec quotes an Exec argument with double quotes, where ", `, $ and \ would need
# escaping twice over; refuse those rather than get it subtly wrong. A literal % is written %%.
case $binary in
    *'"'* | *'`'* | *'$'* | *'\'*)
        echo "install.sh: the path $binary contains \" \` \$ or \\; move the bundle to a plainer path" >&2
        exit 2 ;;
esac
exec_path=$(printf '%s' "$binary" | sed 's/%/%%/g')
case $exec_path in
    *[[:space:]\'\>\<~\|\&\;\*\?\#\(\)]*) exec_path="\"$exec_path\"" ;;
esac

mkdir -p "$apps" "$icons/256x256/apps" "$icons/scalable/apps"
cp "$root/resources/icon.png" "$icons/256x256/apps/fxstudio.png"
cp "$root/resources/icon.svg" "$icons/scalable/apps/fxstudio.svg"
tmp="$desktop.tmp.$$"
while IFS= read -r line; do
    case $line in
        Exec=*) printf 'Exec=%s %%f\n' "$exec_path" ;;
        TryExec=*) printf 'TryExec=%s\n' "$binary" ;;
        *) printf '%s\n' "$line" ;;
    esac
done < "$here/fxstudio.desktop" > "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$desktop"
refresh
echo "installed $desktop (runs $binary) and the fxstudio icon under $icons"
