#!/usr/bin/env bash
# Screenshot of the real window mid-reply, driven by the keyboard under Xvfb (for the README).
# Needs Debian's xvfb (with libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 for Qt's xcb plugin),
# xdotool and imagemagick, and `make install` done. Output: $OUTPUT (default resources/screenshot.png)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
DISPLAY_NUMBER=${DISPLAY_NUMBER:-:93}
QUESTION=${QUESTION:-"Explain in a few sentences why streaming makes a chatbot feel faster."}
# QUESTIONS: several messages, one per line, sent one after another (a chat of several turns); each after the
# last reply had WAIT_BETWEEN seconds. KEYS_BEFORE_LAST: xdotool keys pressed before the last message (ctrl+k).
WAIT_AFTER_ENTER=${WAIT_AFTER_ENTER:-3}
OUTPUT=${OUTPUT:-resources/screenshot.png}
SCREEN=${SCREEN:-1400x950}
Xvfb "$DISPLAY_NUMBER" -screen 0 "${SCREEN}x24" -nolisten tcp >/dev/null 2>&1 &
XVFB_PID=$!
APP_PID=
trap 'kill $APP_PID $XVFB_PID 2>/dev/null || true' EXIT
export DISPLAY=$DISPLAY_NUMBER
# A fresh profile: default settings and no saved chats, as a new user sees it.
PROFILE=$(mktemp -d)
export XDG_CONFIG_HOME=$PROFILE/config XDG_DATA_HOME=$PROFILE/data
# A real X11 screen (Qt's xcb platform), not the offscreen one the tests mostly use.
export QT_QPA_PLATFORM=xcb
for _ in $(seq 1 20); do xdotool getdisplaygeometry >/dev/null 2>&1 && break; sleep 0.25; done
# This checkout's code (python -m from the repository root), whatever the venv's editable install points at.
"$VENV/bin/python" -m cli.main "$@" >/tmp/latencylab-screenshot.log 2>&1 &
APP_PID=$!
WINDOW=
for _ in $(seq 1 120); do
  WINDOW=$(xdotool search --name "Latency Lab" 2>/dev/null | head -1 || true)
  [ -n "$WINDOW" ] && break
  sleep 0.5
done
[ -n "$WINDOW" ] || { echo "the window did not appear; see /tmp/latencylab-screenshot.log" >&2; exit 1; }
# The model loads behind the window; a message sent before it is ready waits for it anyway.
sleep "${WAIT_FOR_LOAD:-12}"
# Xvfb runs no window manager, so focus the window directly (windowactivate needs one).
xdotool windowfocus --sync "$WINDOW"
if [ -n "${QUESTIONS:-}" ]; then
  mapfile -t MESSAGES <<<"$QUESTIONS"
  for index in "${!MESSAGES[@]}"; do
    if [ "$index" -eq $((${#MESSAGES[@]} - 1)) ] && [ -n "${KEYS_BEFORE_LAST:-}" ]; then xdotool key $KEYS_BEFORE_LAST; fi
    xdotool type --delay 15 "${MESSAGES[$index]}"
    xdotool key Return
    [ "$index" -eq $((${#MESSAGES[@]} - 1)) ] || sleep "${WAIT_BETWEEN:-6}"
  done
else
  xdotool type --delay 15 "$QUESTION"
  xdotool key Return
fi
sleep "$WAIT_AFTER_ENTER"
# The window alone: the window opens smaller than the screen, which is otherwise black around it.
import -window "$WINDOW" "$OUTPUT"
echo "wrote $OUTPUT"
xdotool key ctrl+q
for _ in $(seq 1 20); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.5; done
