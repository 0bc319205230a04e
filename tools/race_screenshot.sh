#!/usr/bin/env bash
# A race in the real window under Xvfb, driven by the keyboard and mouse as a user would (for the README and the
# acceptance checks): Chat → Race (Ctrl+D) opens it set up from the chat (A streaming, B not), RACE_KEYS changes
# what it should, Ctrl+Enter runs it, and the race window is grabbed once RACE_WAIT seconds have passed.
# Needs what tools/screenshot.sh needs. Options go to the app: tools/race_screenshot.sh --dtype native
#   RACE_KEYS: a bash snippet run with $RACE (the race window's id) once it is open, e.g. clicks on B's dtype
#   RACE_WAIT: seconds from Ctrl+Enter to the screenshot (the race runs, then plays back)
#   OUTPUT: the PNG (default resources/race.png)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
DISPLAY_NUMBER=${DISPLAY_NUMBER:-:94}
RACE_WAIT=${RACE_WAIT:-30}
OUTPUT=${OUTPUT:-resources/race.png}
Xvfb "$DISPLAY_NUMBER" -screen 0 1400x950x24 -nolisten tcp >/dev/null 2>&1 &
XVFB_PID=$!
APP_PID=
trap 'kill $APP_PID $XVFB_PID 2>/dev/null || true' EXIT
export DISPLAY=$DISPLAY_NUMBER
PROFILE=$(mktemp -d)
export XDG_CONFIG_HOME=$PROFILE/config XDG_DATA_HOME=$PROFILE/data
export QT_QPA_PLATFORM=xcb
for _ in $(seq 1 20); do xdotool getdisplaygeometry >/dev/null 2>&1 && break; sleep 0.25; done
"$VENV/bin/python" -m cli.main "$@" >/tmp/latencylab-race-screenshot.log 2>&1 &
APP_PID=$!
WINDOW=
for _ in $(seq 1 120); do
  WINDOW=$(xdotool search --name "^Latency Lab$" 2>/dev/null | head -1 || true)
  [ -n "$WINDOW" ] && break
  sleep 0.5
done
[ -n "$WINDOW" ] || { echo "the window did not appear; see /tmp/latencylab-race-screenshot.log" >&2; exit 1; }
sleep "${WAIT_FOR_LOAD:-12}"
xdotool windowfocus --sync "$WINDOW"
xdotool key ctrl+d
RACE=
for _ in $(seq 1 40); do
  RACE=$(xdotool search --name "^Race — Latency Lab$" 2>/dev/null | head -1 || true)
  [ -n "$RACE" ] && break
  sleep 0.25
done
[ -n "$RACE" ] || { echo "the race window did not appear" >&2; exit 1; }
xdotool windowmove "$RACE" 0 0
xdotool windowfocus --sync "$RACE"
sleep 1
if [ -n "${RACE_KEYS:-}" ]; then eval "$RACE_KEYS"; fi
xdotool windowfocus --sync "$RACE"
xdotool key ctrl+Return
sleep "$RACE_WAIT"
import -window "$RACE" "$OUTPUT"
echo "wrote $OUTPUT"
xdotool windowfocus --sync "$WINDOW"
xdotool key ctrl+q
for _ in $(seq 1 20); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.5; done
