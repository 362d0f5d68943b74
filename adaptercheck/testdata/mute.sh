#!/bin/sh
# Broken on purpose: answers init, then never answers again.
read -r line
echo '{"in_reply_to":0,"type":"init_ok"}'
exec cat >/dev/null
