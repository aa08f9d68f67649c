#!/usr/bin/env bash
# Writes the exports the input tests read, byte for byte as the tools people migrate from write
# them: Excel's "CSV" on a European Windows (Windows-1252, semicolons, decimal commas, CRLF),
# Excel's "Unicode Text" (UTF-16LE with a byte-order mark, tabs, CRLF), a database's tab dump, a
# header-less dump, an API's pretty-printed JSON array, an .xlsx workbook, and empty exports.
# Every file holds the six pairs of samples/subscriptions.csv (the simulator ends them as four
# restored, one nothing_to_restore, one profile_not_found).
#
#   bash scripts/make-input-fixtures.sh
#
# The useful ones go to samples/, the rest to Tests/Fixtures/inputs/. Uses iconv and zip.
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=Tests/Fixtures/inputs
mkdir -p "$fixtures"
work=$(mktemp -d /tmp/botsi-inputs.XXXXXX)
trap 'rm -rf "$work"' EXIT

profiles=(5f0c8a7e-1b2d-4c3e-9f4a-0d1e2f3a4b5c 8e1d2c3b-4a59-4687-b9a0-c1d2e3f4a5b6
    0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f
    unknown-7b6a5c4d-3e2f-4a1b-9c8d 1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b)
ids=(2000000512345671 2000000512345682 2000000512345693 2000000512345700 2000000512345714 2000000512345725)
products=("Premium Jahresabo" "Premium Monatsabo" "Premium Jahresabo" "Premium Monatsabo" "Testphase" "Premium Jahresabo")
prices=("59,99 €" "\"4,99\"" "59,99 €" "\"4,99\"" "0,00 €" "59,99 €")

crlf() { sed 's/$/\r/'; }

# Excel 365, "CSV (Trennzeichen-getrennt)" on German Windows: Windows-1252, ';', CRLF, prices with a
# decimal comma (quoted by some exporters, bare by others), umlauts and € in columns not read.
{
    echo "profileId;originalTransactionId;Produkt;Preis;Währung;Kündigung zum"
    for i in "${!ids[@]}"; do
        echo "${profiles[$i]};${ids[$i]};${products[$i]};${prices[$i]};EUR;31.12.2026"
    done
} | crlf | iconv -f UTF-8 -t WINDOWS-1252 >samples/excel-semicolon.csv

# Excel's "Unicode Text (*.txt)": UTF-16LE with a byte-order mark, tab-separated, CRLF; a note
# column with characters outside the BMP (surrogate pairs) and a quoted field over two lines.
{
    printf 'profileId\toriginalTransactionId\tnote\n'
    for i in "${!ids[@]}"; do
        note="Zoë 🎉 row $((i + 1))"
        [ "$i" = 2 ] && note='"renewed twice,
then cancelled"'
        printf '%s\t%s\t%s\n' "${profiles[$i]}" "${ids[$i]}" "$note"
    done
} | crlf | iconv -f UTF-8 -t UTF-16 >samples/excel-unicode-text.txt
# iconv's UTF-16 is big-endian with a BOM on some systems: make it the LE that Excel writes.
if [ "$(head -c 2 samples/excel-unicode-text.txt | xxd -p)" != fffe ]; then
    { printf '\xff\xfe'; tail -c +3 samples/excel-unicode-text.txt | iconv -f UTF-16BE -t UTF-16LE; } >"$work/le"
    mv "$work/le" samples/excel-unicode-text.txt
fi

# A database's tab-separated dump (psql \copy … TO STDOUT, mysql -B), with a header.
{
    printf 'profile_id\toriginal_transaction_id\tcreated_at\n'
    for i in "${!ids[@]}"; do printf '%s\t%s\t2025-11-%02d 10:15:00\n' "${profiles[$i]}" "${ids[$i]}" "$((i + 1))"; done
} >samples/export.tsv

# A dump without a header (sqlite3 -csv, psql -At -F,): read with --no-header --profile-column 1
# --transaction-column 2.
for i in "${!ids[@]}"; do echo "${profiles[$i]},${ids[$i]},app_store"; done >samples/no-header.csv

# An API's answer saved to a file, pretty-printed as jq and most SDKs write it.
{
    echo "["
    for i in "${!ids[@]}"; do
        sep=","
        [ "$i" = 5 ] && sep=""
        printf '  {\n    "profileId": "%s",\n    "originalTransactionId": "%s",\n    "store": "app_store"\n  }%s\n' \
            "${profiles[$i]}" "${ids[$i]}" "$sep"
    done
    echo "]"
} >samples/subscriptions.json

# An Excel workbook (.xlsx is a ZIP of SpreadsheetML), the file people try before exporting.
mkdir -p "$work/xlsx/_rels" "$work/xlsx/xl/_rels" "$work/xlsx/xl/worksheets"
cat >"$work/xlsx/[Content_Types].xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>
EOF
cat >"$work/xlsx/_rels/.rels" <<'EOF'
<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>
EOF
cat >"$work/xlsx/xl/workbook.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Subscriptions" sheetId="1" r:id="rId1"/></sheets></workbook>
EOF
cat >"$work/xlsx/xl/_rels/workbook.xml.rels" <<'EOF'
<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>
EOF
{
    printf '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    printf '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    printf '<row r="1"><c r="A1" t="inlineStr"><is><t>profileId</t></is></c><c r="B1" t="inlineStr"><is><t>originalTransactionId</t></is></c></row>'
    for i in "${!ids[@]}"; do
        printf '<row r="%d"><c r="A%d" t="inlineStr"><is><t>%s</t></is></c><c r="B%d" t="inlineStr"><is><t>%s</t></is></c></row>' \
            "$((i + 2))" "$((i + 2))" "${profiles[$i]}" "$((i + 2))" "${ids[$i]}"
    done
    printf '</sheetData></worksheet>\n'
} >"$work/xlsx/xl/worksheets/sheet1.xml"
rm -f "$fixtures/subscriptions.xlsx"
(cd "$work/xlsx" && TZ=UTC zip -X -q -D -r "$OLDPWD/$fixtures/subscriptions.xlsx" '[Content_Types].xml' _rels xl)

# Quiet nights: a 0-byte export and one with only its header.
: >"$fixtures/empty.csv"
printf 'profileId,originalTransactionId\r\n' >"$fixtures/header-only.csv"

echo "written: samples/{excel-semicolon.csv,excel-unicode-text.txt,export.tsv,no-header.csv,subscriptions.json}," \
    "$fixtures/{subscriptions.xlsx,empty.csv,header-only.csv}"
