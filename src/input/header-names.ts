/**
 * The names spreadsheets and accounting exports give the payout fields in German, French,
 * Spanish, Dutch, Italian and English. They are never read without --map (a column picked by
 * its name is a guess about money): they make the --map a refusal offers, ready to paste.
 */
import { shellWord } from '../output/display.js';
import { PAYOUT_FIELDS, type PayoutField } from './types.js';

/** Each field's other names, written without accents, case, spaces or punctuation. */
const OTHER_NAMES: Readonly<Record<PayoutField, readonly string[]>> = {
  reference_id: [
    // en, de, fr, es, nl, it
    'reference',
    'ref',
    'paymentreference',
    'invoicenumber',
    'referenz',
    'referenznummer',
    'zahlungsreferenz',
    'kundenreferenz',
    'rechnungsnummer',
    'belegnummer',
    'buchungsnummer',
    'referencedepaiement',
    'numerodefacture',
    'referencia',
    'referenciadepago',
    'numerodefactura',
    'referentie',
    'kenmerk',
    'betalingskenmerk',
    'factuurnummer',
    'riferimento',
    'rif',
    'numerofattura',
  ],
  amount: [
    'value',
    'payoutamount',
    'betrag',
    'zahlbetrag',
    'auszahlungsbetrag',
    'summe',
    'montant',
    'importe',
    'monto',
    'cantidad',
    'bedrag',
    'importo',
    'ammontare',
  ],
  currency: [
    'currencycode',
    'ccy',
    'wahrung',
    'waehrung',
    'wahrungscode',
    'devise',
    'monnaie',
    'moneda',
    'divisa',
    'valuta',
    'munt',
  ],
  recipient: [
    'payee',
    'beneficiary',
    'email',
    'emailaddress',
    'empfanger',
    'empfaenger',
    'zahlungsempfanger',
    'begunstigter',
    'beneficiaire',
    'destinataire',
    'beneficiario',
    'destinatario',
    'begunstigde',
    'ontvanger',
  ],
  description: [
    'memo',
    'note',
    'purpose',
    'verwendungszweck',
    'beschreibung',
    'buchungstext',
    'zweck',
    'libelle',
    'motif',
    'descripcion',
    'concepto',
    'omschrijving',
    'beschrijving',
    'mededeling',
    'descrizione',
    'causale',
  ],
};

const FIELD_BY_NAME: ReadonlyMap<string, PayoutField> = new Map(
  PAYOUT_FIELDS.flatMap((f) => OTHER_NAMES[f].map((n) => [n, f] as const)),
);

/** A unit after a name, as exports write it: "Betrag (EUR)", "Montant [€]", "Importe en EUR". */
const UNIT = /\s*(?:[([]\s*(?:[A-Z]{3}|[€$£])\s*[)\]]|\s(?:in|en)\s+(?:[A-Z]{3}|[€$£]))\s*$/u;

/**
 * A header as the other names are written: "Währung" → "wahrung", "Réf." → "ref",
 * "Betrag (EUR)" → "betrag" (the unit says nothing of the field), "Beleg-Nr." → "belegnummer".
 */
function plainName(header: string): string {
  return header
    .replace(UNIT, '')
    .replace(/[-\s]*Nr\.?$/iu, 'nummer')
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '');
}

/** The field a header's name stands for in another language, if it is a known one. */
export function fieldOfName(header: string): PayoutField | undefined {
  return FIELD_BY_NAME.get(plainName(header));
}

/**
 * The header each of `fields` would be read from, by its known other names: the first
 * column of each name, never one column for two fields, nor one `taken` already.
 */
export function guessMap(
  header: readonly string[],
  fields: readonly PayoutField[],
  taken: ReadonlySet<number> = new Set(),
): Partial<Record<PayoutField, string>> {
  const map: Partial<Record<PayoutField, string>> = {};
  const used = new Set(taken);
  for (let i = 0; i < header.length; i++) {
    const name = header[i]!.trim();
    const field = fieldOfName(name);
    if (field === undefined || used.has(i) || !fields.includes(field) || map[field]) continue;
    map[field] = name;
    used.add(i);
  }
  return map;
}

/** A --map value as it is typed, fields in their documented order: `'amount=Betrag,…'`. */
export function mapWord(map: Partial<Record<PayoutField, string>>): string {
  const parts = PAYOUT_FIELDS.filter((f) => map[f] !== undefined).map((f) => {
    const header = map[f]!;
    return `${f}=${/[",]/.test(header) ? JSON.stringify(header) : header}`;
  });
  return shellWord(parts.join(','));
}
