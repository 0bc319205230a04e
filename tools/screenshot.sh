#!/usr/bin/env bash
# Screenshot of the real window mid-reply, driven by the keyboard under Xvfb (for the README).
# Needs Debian's xvfb, xdotool and imagemagick, and `make install` done. Output: resources/screenshot.png
set -euo pipefail
cd "$(dirname "$0")/.."
DISPLAY_NUMBER=${DISPLAY_NUMBER:-:93}
QUESTION=${QUESTION:-"Explain in a few sentences why streaming makes a chatbot feel faster."}
WAIT_AFTER_ENTER=${WAIT_AFTER_ENTER:-3}
Xvfb "$DISPLAY_NUMBER" -screen 0 1400x900x24 >/dev/null 2>&1 &
XVFB_PID=$!
trap 'kill $APP_PID $XVFB_PID 2>/dev/null || true' EXIT
export DISPLAY=$DISPLAY_NUMBER
# A fresh profile: default settings and no saved chats, as a new user sees it.
PROFILE=$(mktemp -d)
export XDG_CONFIG_HOME=$PROFILE/config XDG_DATA_HOME=$PROFILE/data
unset QT_QPA_PLATFORM
sleep 1
.venv/bin/latencylab "$@" >/tmp/latencylab-screenshot.log 2>&1 &
APP_PID=$!
for _ in $(seq 1 120); do
  WINDOW=$(xdotool search --name "Latency Lab" 2>/dev/null | head -1 || true)
  [ -n "$WINDOW" ] && break
  sleep 0.5
done
sleep 8  # the model loads behind the window
xdotool windowactivate --sync "$WINDOW" || true
xdotool type --delay 15 "$QUESTION"
xdotool key Return
sleep "$WAIT_AFTER_ENTER"
import -window root resources/screenshot.png
echo "wrote resources/screenshot.png"
xdotool key ctrl+q
for _ in $(seq 1 20); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.5; done
