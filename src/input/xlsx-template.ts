/**
 * A ready-to-fill .xlsx workbook, written by hand: the reading library's free edition cannot
 * give a whole column a number format, and the text format of whole columns is the point.
 */
import { deflateRawSync } from 'node:zlib';

/** The sheet the template's rows are on. */
export const TEMPLATE_SHEET = 'Payouts';

/** A column of the template: its header, its example value, whether it is Text ("@"), its width. */
interface TemplateColumn {
  header: string;
  example: string;
  text: boolean;
  width: number;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** The CRC-32 a zip entry carries (node:zlib has crc32 only from Node 22 on). */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A zip archive of deflated entries, as an .xlsx file is (no zip64, no data descriptors). */
export function zipArchive(entries: ReadonlyArray<{ name: string; data: Uint8Array }>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const packed = deflateRawSync(entry.data);
    const crc = crc32(entry.data);
    // Version 2.0, no flags, deflate, time and date 1980-01-01 00:00 (the file has no time).
    const common = (h: Buffer, at: number) => {
      h.writeUInt16LE(20, at);
      h.writeUInt16LE(0, at + 2);
      h.writeUInt16LE(8, at + 4);
      h.writeUInt16LE(0, at + 6);
      h.writeUInt16LE(0x21, at + 8);
      h.writeUInt32LE(crc, at + 10);
      h.writeUInt32LE(packed.length, at + 14);
      h.writeUInt32LE(entry.data.length, at + 18);
      h.writeUInt16LE(name.length, at + 22);
    };
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    common(local, 4);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    common(central, 6);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, packed);
    centrals.push(central, name);
    offset += local.length + name.length + packed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** Escapes text for XML content and attributes. */
function xml(text: string): string {
  return text.replace(
    /[<>&"]/g,
    (c) => `&${{ '<': 'lt', '>': 'gt', '&': 'amp', '"': 'quot' }[c]};`,
  );
}

const MAIN = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const PKG_REL = 'http://schemas.openxmlformats.org/package/2006/relationships';
const DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

// Cell formats: 0 General, 1 Text ("@", built-in number format 49), 2 bold, 3 bold Text.
const STYLES = `${DECL}<styleSheet xmlns="${MAIN}"><fonts count="2"><font><sz val="11"/><name val="Calibri"/></font><font><b/><sz val="11"/><name val="Calibri"/></font></fonts><fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills><borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders><cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs><cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/><xf numFmtId="49" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/><xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/><xf numFmtId="49" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1" applyNumberFormat="1"/></cellXfs><cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>`;

/** The worksheet: the header in bold, the example row, Text columns styled as a whole. */
function sheetXml(columns: readonly TemplateColumn[]): string {
  const letter = (i: number) => String.fromCharCode(65 + i);
  const cols = columns
    .map(
      (c, i) =>
        `<col min="${i + 1}" max="${i + 1}" width="${c.width}" customWidth="1"${c.text ? ' style="1"' : ''}/>`,
    )
    .join('');
  const row = (r: number, bold: boolean, value: (c: TemplateColumn) => string) =>
    `<row r="${r}">${columns
      .map((c, i) => {
        const style = (bold ? 2 : 0) + (c.text ? 1 : 0);
        return `<c r="${letter(i)}${r}" s="${style}" t="inlineStr"><is><t>${xml(value(c))}</t></is></c>`;
      })
      .join('')}</row>`;
  return `${DECL}<worksheet xmlns="${MAIN}" xmlns:r="${REL}"><sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/></sheetView></sheetViews><cols>${cols}</cols><sheetData>${row(1, true, (c) => c.header)}${row(2, false, (c) => c.example)}</sheetData></worksheet>`;
}

/**
 * The template workbook: one sheet "Payouts" with the documented columns, the example row, and
 * the columns that must keep their digits (reference_id, amount, recipient) formatted as Text,
 * so Excel keeps 000123, 1234567890123456 and +4915112345678 as typed.
 */
export function xlsxTemplate(example: Readonly<Record<string, string>>): Buffer {
  const asText = new Set(['reference_id', 'amount', 'recipient']);
  const columns = Object.entries(example).map(([header, value]) => ({
    header,
    example: value,
    text: asText.has(header),
    width: Math.max(12, header.length + 4, value.length + 4),
  }));
  const parts: Array<[string, string]> = [
    [
      '[Content_Types].xml',
      `${DECL}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/></Types>`,
    ],
    [
      '_rels/.rels',
      `${DECL}<Relationships xmlns="${PKG_REL}"><Relationship Id="rId1" Type="${REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
    ],
    [
      'xl/workbook.xml',
      `${DECL}<workbook xmlns="${MAIN}" xmlns:r="${REL}"><sheets><sheet name="${TEMPLATE_SHEET}" sheetId="1" r:id="rId1"/></sheets></workbook>`,
    ],
    [
      'xl/_rels/workbook.xml.rels',
      `${DECL}<Relationships xmlns="${PKG_REL}"><Relationship Id="rId1" Type="${REL}/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="${REL}/styles" Target="styles.xml"/></Relationships>`,
    ],
    ['xl/styles.xml', STYLES],
    ['xl/worksheets/sheet1.xml', sheetXml(columns)],
  ];
  return zipArchive(parts.map(([name, text]) => ({ name, data: Buffer.from(text, 'utf8') })));
}
