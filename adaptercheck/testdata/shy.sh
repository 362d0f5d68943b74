#!/bin/sh
# Slow to start on purpose: the Perl example adapter, but each client's
# first two acquires are answered refused without asking Redis, as a lock
# on several nodes refuses a free key when too few answer in time. The
# check tries a free key again and passes the adapter, with a note.
exec 3>&1
perl -ne 'BEGIN { open(OUT, ">&=", 3) or die; select(OUT); $| = 1; select(STDOUT); $| = 1 }
  if (/"type":"acquire"/ && $n++ < 2) { /"id":(\d+)/; print OUT "{\"in_reply_to\":$1,\"type\":\"refused\"}\n"; next }
  print' | perl ../../adapters/perl/token/adapter.pl
