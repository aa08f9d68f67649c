#!/usr/bin/env bash
# Makes the StoreKit 2 signed transactions (JWS) and App Store receipts (PKCS#7) that the input
# tests, the fuzz seeds and the samples use: real-shaped, with known ids, plus truncated and
# hostile variants. Only the openssl CLI, xxd and this script's small generators are used.
#
#   bash scripts/make-purchase-fixtures.sh
#
# Writes Tests/Fixtures/purchases/ (every fixture; MANIFEST says what each holds), the seeds in
# Tests/FuzzCorpus/jws/ and Tests/FuzzCorpus/receipt/, and samples/signed-transactions.jsonl and
# samples/receipts.csv. The keys are made afresh each time (a throw-away chain named "Botsi
# fixtures", not Apple's), so the bytes change from run to run; the ids, bundle ids and
# environments do not, and the tests check those. botsi-restore never verifies the signature.
set -euo pipefail
cd "$(dirname "$0")/.."
out=Tests/Fixtures/purchases
work=$(mktemp -d /tmp/botsi-fixtures.XXXXXX)
trap 'rm -rf "$work"' EXIT
rm -rf "$out" Tests/FuzzCorpus/jws Tests/FuzzCorpus/receipt
mkdir -p "$out" Tests/FuzzCorpus/jws Tests/FuzzCorpus/receipt

bundle=com.example.botsi
manifest="$out/MANIFEST"
echo "# file | what it holds (made by scripts/make-purchase-fixtures.sh)" >"$manifest"
note() { echo "$1 | $2" >>"$manifest"; }

# --- A certificate chain like Apple's: root, intermediate, leaf (EC P-256 for JWS, RSA for receipts).
chain() { # kind (ec|rsa), directory
    local kind=$1 dir="$work/$2" key
    mkdir -p "$dir"
    for name in root intermediate leaf; do
        if [ "$kind" = ec ]; then
            openssl ecparam -name prime256v1 -genkey -noout -out "$dir/$name.key"
        else
            openssl genrsa -out "$dir/$name.key" 2048 2>/dev/null
        fi
    done
    openssl req -x509 -new -key "$dir/root.key" -subj "/CN=Botsi fixtures root/O=botsi-restore tests" \
        -days 36500 -out "$dir/root.pem" 2>/dev/null
    for pair in intermediate:root leaf:intermediate; do
        local name=${pair%%:*} issuer=${pair##*:}
        openssl req -new -key "$dir/$name.key" -subj "/CN=Botsi fixtures $name/O=botsi-restore tests" \
            -out "$dir/$name.csr" 2>/dev/null
        printf 'basicConstraints=critical,CA:%s\n' "$([ "$name" = leaf ] && echo FALSE || echo TRUE)" >"$dir/$name.ext"
        openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$issuer.pem" -CAkey "$dir/$issuer.key" \
            -CAcreateserial -days 36500 -extfile "$dir/$name.ext" -out "$dir/$name.pem" 2>/dev/null
    done
    cat "$dir/intermediate.pem" "$dir/root.pem" >"$dir/chain.pem"
}
chain ec jws
chain rsa receipt

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
der_b64() { openssl x509 -in "$1" -outform DER | openssl base64 -A; }

# --- JWS: header with the x5c chain, payload as Apple's JWSTransactionDecodedPayload, ES256
# signature as the raw 64-byte r||s that JWS uses (openssl gives DER, converted here).
jws_header=$(printf '{"alg":"ES256","x5c":["%s","%s","%s"]}' \
    "$(der_b64 "$work/jws/leaf.pem")" "$(der_b64 "$work/jws/intermediate.pem")" "$(der_b64 "$work/jws/root.pem")")
payload() { # originalTransactionId environment bundleId -> JSON
    printf '{"transactionId":"%s","originalTransactionId":"%s","webOrderLineItemId":"2000000047120934","bundleId":"%s","productId":"premium_monthly","subscriptionGroupIdentifier":"21482761","purchaseDate":1764547200000,"originalPurchaseDate":1761955200000,"expiresDate":1767225600000,"quantity":1,"type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":1764547201000,"environment":"%s","transactionReason":"RENEWAL","storefront":"DEU","storefrontId":"143443","price":9990,"currency":"EUR","appTransactionId":"704289572311652181"}' \
        "$(($1 + 7))" "$1" "$3" "$2"
}
sign_jws() { # header JSON, payload JSON -> compact JWS
    local input
    input="$(printf '%s' "$1" | b64url).$(printf '%s' "$2" | b64url)"
    printf '%s' "$input" | openssl dgst -sha256 -sign "$work/jws/leaf.key" -out "$work/sig.der"
    local r s
    r=$(openssl asn1parse -inform DER -in "$work/sig.der" | awk -F: '/INTEGER/ {print $NF}' | sed -n 1p)
    s=$(openssl asn1parse -inform DER -in "$work/sig.der" | awk -F: '/INTEGER/ {print $NF}' | sed -n 2p)
    pad() { printf '%064s' "${1: -64}" | tr ' ' 0; }
    printf '%s.%s' "$input" "$(printf '%s%s' "$(pad "$r")" "$(pad "$s")" | xxd -r -p | b64url)"
}
jws() { # name, what, header, payload
    sign_jws "$3" "$4" >"$out/$1.jws"
    cp "$out/$1.jws" "Tests/FuzzCorpus/jws/$1"
    note "$1.jws" "$2"
}
jws jws-production "Production, $bundle, originalTransactionId 2000000600000011" \
    "$jws_header" "$(payload 2000000600000011 Production $bundle)"
jws jws-sandbox "Sandbox, $bundle, originalTransactionId 2000000600000022" \
    "$jws_header" "$(payload 2000000600000022 Sandbox $bundle)"
jws jws-other-bundle "Production, com.example.other, originalTransactionId 2000000600000033" \
    "$jws_header" "$(payload 2000000600000033 Production com.example.other)"
jws jws-xcode "Xcode environment (StoreKit testing), $bundle, originalTransactionId 2000000600000044" \
    "$jws_header" "$(payload 2000000600000044 Xcode $bundle)"
jws jws-numeric-id "originalTransactionId written as a JSON number 2000000600000055 (not Apple's form, still exact)" \
    "$jws_header" "$(payload 2000000600000055 Production $bundle | sed 's/"originalTransactionId":"\([0-9]*\)"/"originalTransactionId":\1/')"
jws jws-no-original-id "hostile: a payload without originalTransactionId" \
    "$jws_header" "$(payload 2000000600000066 Production $bundle | sed 's/"originalTransactionId":"[0-9]*",//')"
jws jws-duplicate-id "hostile: a payload with originalTransactionId twice (2000000600000077 and 2000000600000088)" \
    "$jws_header" "$(payload 2000000600000077 Production $bundle | sed 's/}$/,"originalTransactionId":"2000000600000088"}/')"
jws jws-id-letters "hostile: originalTransactionId TX-2000000600000099" \
    "$jws_header" "$(payload 2000000600000099 Production $bundle | sed 's/"originalTransactionId":"/"originalTransactionId":"TX-/')"
jws jws-deep-payload "hostile: a payload nested 100 levels deep" \
    "$jws_header" "{\"originalTransactionId\":\"2000000600000011\",\"x\":$(printf '[%.0s' {1..100})$(printf ']%.0s' {1..100})}"
jws jws-payload-not-json "hostile: a payload that is not JSON" "$jws_header" "not json at all"
jws jws-no-alg "hostile: a header without alg" '{"typ":"JWT"}' "$(payload 2000000600000011 Production $bundle)"

good=$(cat "$out/jws-production.jws")
printf '%s' "${good:0:$((${#good} / 2))}" >"$out/jws-truncated.jws"
note jws-truncated.jws "hostile: jws-production cut in half (in the payload)"
printf '%s' "${good%.*}" >"$out/jws-two-parts.jws"
note jws-two-parts.jws "hostile: jws-production without its signature part"
printf '%s' "$good" | tr -- '-_' '+/' >"$out/jws-standard-base64.jws"
note jws-standard-base64.jws "hostile: jws-production with + and / instead of base64url's - and _"
printf '%s.%s.' "${good%%.*}" "$(printf '%s' "$good" | cut -d. -f2)" >"$out/jws-empty-signature.jws"
note jws-empty-signature.jws "hostile: jws-production with an empty signature (alg none style)"
for name in jws-truncated jws-two-parts jws-standard-base64 jws-empty-signature; do
    cp "$out/$name.jws" "Tests/FuzzCorpus/jws/$name"
done

# --- Receipts: an ASN.1 payload written by openssl asn1parse -genconf from the config this
# generator writes, signed into PKCS#7 signedData by openssl smime (BER with indefinite
# lengths, as Apple's receipts are; one DER variant).
receipt_config() { # bundle, then in-app purchases as "transactionId:originalTransactionId" (or ":" for none)
    local bundle=$1
    shift
    echo "asn1 = SET:payload"
    echo "[payload]"
    echo "type0 = SEQUENCE:attr_environment"
    echo "bundle = SEQUENCE:attr_bundle"
    echo "app_version = SEQUENCE:attr_version"
    echo "opaque = SEQUENCE:attr_opaque"
    echo "hash = SEQUENCE:attr_hash"
    local index=0
    for purchase in "$@"; do
        index=$((index + 1))
        echo "in_app_$index = SEQUENCE:attr_in_app_$index"
    done
    printf '[attr_environment]\ntype = INTEGER:0\nversion = INTEGER:1\nvalue = OCTWRAP,UTF8:Production\n'
    printf '[attr_bundle]\ntype = INTEGER:2\nversion = INTEGER:1\nvalue = OCTWRAP,UTF8:%s\n' "$bundle"
    printf '[attr_version]\ntype = INTEGER:3\nversion = INTEGER:1\nvalue = OCTWRAP,UTF8:3082\n'
    printf '[attr_opaque]\ntype = INTEGER:4\nversion = INTEGER:1\nvalue = FORMAT:HEX,OCTETSTRING:8A3F09D1C2B7E4\n'
    printf '[attr_hash]\ntype = INTEGER:5\nversion = INTEGER:1\nvalue = FORMAT:HEX,OCTETSTRING:0F1E2D3C4B5A69788796A5B4C3D2E1F00F1E2D3C\n'
    index=0
    for purchase in "$@"; do
        index=$((index + 1))
        local transaction=${purchase%%:*} original=${purchase##*:}
        printf '[attr_in_app_%s]\ntype = INTEGER:17\nversion = INTEGER:1\nvalue = OCTWRAP,SET:in_app_%s\n' "$index" "$index"
        printf '[in_app_%s]\nquantity = SEQUENCE:q_%s\nproduct = SEQUENCE:p_%s\n' "$index" "$index" "$index"
        if [ -n "$transaction" ]; then printf 'transaction = SEQUENCE:t_%s\n' "$index"; fi
        if [ -n "$original" ]; then printf 'original = SEQUENCE:o_%s\n' "$index"; fi
        printf '[q_%s]\ntype = INTEGER:1701\nversion = INTEGER:1\nvalue = OCTWRAP,INTEGER:1\n' "$index"
        printf '[p_%s]\ntype = INTEGER:1702\nversion = INTEGER:1\nvalue = OCTWRAP,UTF8:premium_monthly\n' "$index"
        if [ -n "$transaction" ]; then
            printf '[t_%s]\ntype = INTEGER:1703\nversion = INTEGER:1\nvalue = OCTWRAP,UTF8:%s\n' "$index" "$transaction"
        fi
        if [ -n "$original" ]; then
            printf '[o_%s]\ntype = INTEGER:1705\nversion = INTEGER:1\nvalue = OCTWRAP,UTF8:%s\n' "$index" "$original"
        fi
    done
}
sign_receipt() { # payload DER file, output DER file, extra smime flags...
    local payload=$1 output=$2
    shift 2
    openssl smime -sign -binary -noattr -outform DER -md sha256 -in "$payload" -signer "$work/receipt/leaf.pem" \
        -inkey "$work/receipt/leaf.key" -certfile "$work/receipt/chain.pem" -out "$output" "$@"
}
receipt_from_der() { # name, what, DER file
    openssl base64 -A -in "$3" >"$out/$1.b64"
    cp "$3" "Tests/FuzzCorpus/receipt/$1.der"
    note "$1.b64" "$2"
}
receipt() { # name, what, bundle, purchases...
    local name=$1 what=$2
    shift 2
    receipt_config "$@" >"$work/$name.cnf"
    openssl asn1parse -genconf "$work/$name.cnf" -noout -out "$work/$name.payload"
    sign_receipt "$work/$name.payload" "$work/$name.der" -nodetach -stream
    receipt_from_der "$name" "$what" "$work/$name.der"
}
receipt receipt-two-purchases \
    "$bundle; in-app purchases with original ids 2000000600000101 (twice: a renewal) and 2000000600000112" \
    "$bundle" 2000000600000101:2000000600000101 2000000600000118:2000000600000101 2000000600000112:2000000600000112
receipt receipt-no-purchases "$bundle; no in-app purchase" "$bundle"
receipt receipt-other-bundle "com.example.other; original id 2000000600000134" \
    com.example.other 2000000600000134:2000000600000134
receipt receipt-in-app-without-id "hostile: an in-app purchase with a transaction id but no original id" \
    "$bundle" 2000000600000145:
receipt receipt-id-letters "hostile: original id TX-2000000600000156" "$bundle" TX-2000000600000156:TX-2000000600000156

receipt_config "$bundle" 2000000600000123:2000000600000123 >"$work/der.cnf"
openssl asn1parse -genconf "$work/der.cnf" -noout -out "$work/der.payload"
sign_receipt "$work/der.payload" "$work/der.der" -nodetach
receipt_from_der receipt-der "DER rather than BER; $bundle; original id 2000000600000123" "$work/der.der"
openssl base64 -in "$work/der.der" >"$out/receipt-wrapped.b64"
note receipt-wrapped.b64 "receipt-der's bytes in base64 wrapped at 64 columns (as openssl and many tools write it)"

sign_receipt "$work/der.payload" "$work/detached.der"
receipt_from_der receipt-detached "hostile: a detached signature (PKCS#7 without its content)" "$work/detached.der"
full="$work/receipt-two-purchases.der"
head -c $(($(stat -c %s "$full") / 2)) "$full" >"$work/truncated.der"
receipt_from_der receipt-truncated "hostile: receipt-two-purchases cut in half" "$work/truncated.der"
openssl base64 -A -in "$work/der.payload" >"$out/receipt-bare-payload.b64"
note receipt-bare-payload.b64 "hostile: the ASN.1 payload without its PKCS#7 container"
cp "$work/der.payload" Tests/FuzzCorpus/receipt/receipt-bare-payload.der
# A SET whose length claims 2 GB, then one that is not a SET at all, each properly signed.
printf '3184 7fffffff 3003 020102' | xxd -r -p >"$work/lying.payload"
sign_receipt "$work/lying.payload" "$work/lying.der" -nodetach
receipt_from_der receipt-lying-length "hostile: a signed payload whose SET claims 2 GB" "$work/lying.der"
printf '0c05 68656c6c6f' | xxd -r -p >"$work/string.payload"
sign_receipt "$work/string.payload" "$work/string.der" -nodetach
receipt_from_der receipt-payload-not-set "hostile: a signed payload that is a UTF8String, not a SET" "$work/string.der"
printf 'not*base64!' >"$out/receipt-not-base64.b64"
note receipt-not-base64.b64 "hostile: not base64 at all"

# --- Inputs a migration would bring, made of the fixtures above (also in samples/).
{
    echo '{"profileId":"jws-profile-1","signedTransaction":"'"$(cat "$out/jws-production.jws")"'"}'
    echo '{"profileId":"jws-profile-2","signedTransaction":"'"$(cat "$out/jws-sandbox.jws")"'"}'
    echo '{"profileId":"jws-profile-3","signedTransaction":"'"$(cat "$out/jws-other-bundle.jws")"'"}'
    echo '{"profileId":"jws-profile-4","signedTransaction":"'"$(cat "$out/jws-truncated.jws")"'"}'
    echo '{"profileId":"jws-profile-5","originalTransactionId":"2000000600000177"}'
} >samples/signed-transactions.jsonl
note ../../../samples/signed-transactions.jsonl \
    "lines: production 2000000600000011, sandbox 2000000600000022, other bundle 2000000600000033, truncated, a plain id 2000000600000177"
{
    echo "profileId,receipt,note"
    echo "receipt-profile-1,$(cat "$out/receipt-two-purchases.b64"),two purchases"
    echo "receipt-profile-2,$(cat "$out/receipt-der.b64"),one purchase"
    echo "receipt-profile-3,$(cat "$out/receipt-no-purchases.b64"),no purchase"
    echo "receipt-profile-4,\"$(cat "$out/receipt-wrapped.b64")\",wrapped base64 in a quoted field"
    echo "receipt-profile-5,$(cat "$out/receipt-truncated.b64"),cut short"
} >samples/receipts.csv
note ../../../samples/receipts.csv \
    "rows: 2000000600000101 and 2000000600000112 (line 2), 2000000600000123 (line 3), no purchase (line 4), 2000000600000123 again in a quoted wrapped field (line 5, over several lines), cut short (the last line)"
echo "fixtures written to $out ($(find "$out" -type f | wc -l) files), seeds to Tests/FuzzCorpus/{jws,receipt}, samples/signed-transactions.jsonl, samples/receipts.csv"
