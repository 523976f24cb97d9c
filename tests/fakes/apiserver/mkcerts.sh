#!/bin/bash
# mkcerts.sh DIR SAN   e.g. mkcerts.sh /tmp/x "IP:127.0.0.1,IP:10.254.40.1"
# Writes DIR/ca.crt, DIR/server.{crt,key} (signed by that CA) and
# DIR/wrong-ca.crt (an unrelated CA, for the fail-closed test).
set -eu
dir=$1
san=$2
mkdir -p "$dir"
cd "$dir"
subj() { openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" \
    -keyout "$2.key" -out "$2.crt" 2>/dev/null; }
subj fake-apiserver-ca ca
subj unrelated-ca wrong-ca
openssl req -newkey rsa:2048 -nodes -subj "/CN=kubernetes" \
    -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' \
    "$san" > ext.cnf
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
    -days 2 -extfile ext.cnf -out server.crt 2>/dev/null
rm -f server.csr ext.cnf ca.srl
