#!/bin/sh
# Broken on purpose: answers init, then writes prose instead of JSON.
read -r line
echo '{"in_reply_to":0,"type":"init_ok"}'
while read -r line; do echo "OK, granted"; done
