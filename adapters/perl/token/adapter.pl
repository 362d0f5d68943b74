#!/usr/bin/perl
# A whole lockchaos adapter (docs/protocol.md): token-lua's lock, SET NX PX
# plus compare-and-delete, over Redis's protocol by hand. Perl core only.
use strict; use warnings; use JSON::PP; use IO::Socket::INET; use IO::Select; use MIME::Base64;
my $json = JSON::PP->new->canonical; my ($init, $sock, $n) = ({}, undef, 0);
$| = 1;
my $DEL = 'if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) end return 0';
my $EXT = 'if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) end return 0';

sub line { my ($sel, $t) = @_; my $l = '';   # one CRLF line, or die on timeout
  while ($l !~ /\r\n$/) { die "timeout\n" unless $sel->can_read($t); sysread($sock, my $c, 1) or die "connection closed\n"; $l .= $c }
  $l =~ s/\r\n$//; $l }
sub redis {                                   # one command; its reply, or die
  my @args = @_; my $t = $init->{op_timeout_ms} / 1000;
  $sock //= IO::Socket::INET->new(PeerAddr => $init->{nodes}[0], Timeout => $t) or die "connect: $!\n";
  my $sel = IO::Select->new($sock);
  syswrite($sock, join('', '*' . @args . "\r\n", map { '$' . length($_) . "\r\n$_\r\n" } @args));
  my $r = line($sel, $t); my ($k, $v) = (substr($r, 0, 1), substr($r, 1));
  die "$v\n" if $k eq '-';
  return $v if $k ne '$';
  return undef if $v < 0;
  my $s = ''; $s .= line($sel, $t) while length($s) < $v; $s }
sub answer { print $json->encode({ %{$_[0]}, in_reply_to => $_[1]{id} }), "\n" }

while (my $l = <STDIN>) {
  my $req = decode_json($l); my $type = $req->{type};
  if ($type eq 'init') { $init = $req; answer({ type => 'init_ok' }, $req); next }
  my $key = $req->{key}; my $ttl = $init->{ttl_ms};
  $req->{token} = decode_base64($req->{token_b64}) if defined $req->{token_b64};
  my $res = eval {
    if ($type eq 'acquire') {
      my $tok = "$init->{owner}:" . $n++;
      # value=bytes: random bytes, which no JSON string can carry: token_b64.
      my $ans = { token => $tok };
      if (($init->{options}{value} // '') eq 'bytes') {
        $tok = pack('C*', 0xff, map { int rand 256 } 1..15); $ans = { token_b64 => encode_base64($tok, '') } }
      defined(redis('SET', $key, $tok, 'NX', 'PX', $ttl)) ? { type => 'granted', %$ans } : { type => 'refused' };
    } elsif ($type eq 'release') {
      redis('EVAL', $DEL, 1, $key, $req->{token}) ? { type => 'released' } : { type => 'not_held' };
    } elsif ($type eq 'renew') {
      redis('EVAL', $EXT, 1, $key, $req->{token}, $ttl) ? { type => 'renewed' } : { type => 'not_held' };
    } else { { type => 'error', error => "unknown request type $type" } }
  };
  if (!$res) { chomp(my $e = $@); undef $sock; $res = { type => 'unknown', error => $e } }
  answer($res, $req);
}
