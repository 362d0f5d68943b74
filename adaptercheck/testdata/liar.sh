#!/bin/sh
# Broken on purpose: the Perl example adapter, but every refused is turned
# into granted (an adapter that answers granted when its library refused).
perl ../../adapters/perl/token/adapter.pl | sed -u 's/"type":"refused"/"token":"lie","type":"granted"/'
