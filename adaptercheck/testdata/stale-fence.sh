#!/bin/sh
# Broken on purpose: the Perl example adapter, but every grant carries the
# same fencing token (a fence that never increases keeps no one out).
perl ../../adapters/perl/token/adapter.pl | sed -u 's/"type":"granted"/"fence":7,"type":"granted"/'
