#!/bin/sh
# Broken on purpose: the Perl example adapter, but every granted is turned
# into refused (a lock nobody can take, which no run could find unsafe).
perl ../../adapters/perl/token/adapter.pl | sed -u 's/"type":"granted"/"type":"refused"/'
