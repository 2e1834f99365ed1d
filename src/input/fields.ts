/** The checks every payout row gets, whatever the format it came in. */
import type { Problem } from '../errors.js';
import { type Amount, readAmount } from '../money/amount.js';
import type { CurrencyTable } from '../money/currencies.js';
import { decimalCommaHint, decimalCommaToPoint } from '../money/decimal-comma.js';
import { firstHiddenCharacter } from './characters.js';
import { foldedReference, referenceProblem } from './reference.js';
import type { IntakeSink, PayoutField, ValidPayout } from './types.js';

/** The service's limit on a description, in characters (code points). */
export const DESCRIPTION_MAX = 255;

const THREE_LETTERS = /^[A-Z]{3}$/;
const CURRENCY_SYMBOL = /[$€£¥₹₽₩₺₪₫₱₦₴฿¢]/u;
// Currency texts repeat on almost every row: remember a few outcomes instead of re-deriving them.
const CURRENCY_CACHE_LIMIT = 256;

/** The outcome of reading a currency text: the code and its decimals, or why it is refused. */
type CurrencyOutcome =
  | { ok: true; code: string; digits: number }
  | { ok: false; value: string | undefined; message: string };

/** Counts code points, which is what the service's "characters" are. */
export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is a single character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/**
 * Where a row is: a line number (CSV, NDJSON), or a text such as "item 3" (JSON). A number
 * is formatted only when something is reported, not for each of a million valid rows.
 */
export type RowLocation = number | string;

/** The text of a row's location, as problems show it: 12 -> "line 12". */
export function locationText(where: RowLocation): string {
  return typeof where === 'number' ? `line ${where}` : where;
}

/** A valid row, with its location's text made only when asked for. */
class PayoutRow implements ValidPayout {
  constructor(
    readonly file: string,
    private readonly where: RowLocation,
    readonly reference_id: string,
    readonly amount: Amount,
    readonly currency: string,
    readonly recipient: string,
    readonly description: string | undefined,
    readonly retry_of: string | undefined,
  ) {}

  get location(): string {
    return locationText(this.where);
  }

  get line(): number | undefined {
    return typeof this.where === 'number' ? this.where : undefined;
  }
}

/** The start of a long text, for quoting it in a message. */
function excerpt(s: string, max = 40): string {
  const chars = [...s];
  return chars.length <= max ? s : `${chars.slice(0, max).join('')}…`;
}

/** How a file writes its amounts. */
export interface AmountSyntax {
  /** --decimal-comma: `1.234,56`. */
  decimalComma: boolean;
  /** Whether a refused amount that looks like `1.234,56` may name --decimal-comma (CSV only). */
  hint: boolean;
}

const POINT: AmountSyntax = { decimalComma: false, hint: false };

/**
 * Validates rows of one file and hands the valid ones and the problems to the sink. Values
 * arrive as text; `null` means the value's own reader already reported it as unusable.
 */
export class PayoutChecker {
  private readonly currencyCache = new Map<string, CurrencyOutcome>();
  private lastCurrencyRaw: string | undefined;
  private lastCurrency: CurrencyOutcome | undefined;

  constructor(
    private readonly file: string,
    private readonly currencies: CurrencyTable,
    private readonly sink: IntakeSink,
    private amounts: AmountSyntax = POINT,
  ) {}

  /** Whether amounts are read with a decimal comma (--decimal-comma, or the header says so). */
  get decimalComma(): boolean {
    return this.amounts.decimalComma;
  }

  /**
   * Reads the file's amounts with a decimal comma from now on: its header marks its amount
   * column so (`amount (decimal comma)`, as a report or retry file of ours is written).
   */
  readDecimalComma(): void {
    this.amounts = { ...this.amounts, decimalComma: true };
  }

  /** Checks one row, reporting every problem of it; true when it became a payout. */
  check(
    location: RowLocation,
    referenceRaw: string | null,
    amountRaw: string | null,
    currencyRaw: string | null,
    recipientRaw: string | null,
    descriptionRaw: string | null | undefined,
    retryOfRaw?: string | null,
  ): boolean {
    let ok = referenceRaw !== null && amountRaw !== null && retryOfRaw !== null;
    ok = currencyRaw !== null && recipientRaw !== null && descriptionRaw !== null && ok;

    let reference = '';
    if (referenceRaw !== null) {
      reference = referenceRaw.trim();
      ok = this.checkReference(location, reference) && ok;
    }
    const retryOf = retryOfRaw?.trim() || undefined;
    if (retryOfRaw !== undefined && retryOfRaw !== null) {
      ok = this.checkRetryOf(location, reference, retryOf) && ok;
    }

    let currency: CurrencyOutcome | undefined;
    if (currencyRaw !== null) {
      currency = this.currency(currencyRaw);
    }

    let amount: Amount | undefined;
    if (amountRaw !== null) {
      const read = this.amount(amountRaw, currency?.ok ? currency.digits : undefined);
      if (typeof read === 'string') {
        ok = false;
        const text = amountRaw.trim();
        this.report(location, 'amount', text === '' ? undefined : text, read);
      } else amount = read;
    }

    if (currency !== undefined && !currency.ok) {
      ok = false;
      this.report(location, 'currency', currency.value, currency.message);
    }

    let recipient = '';
    if (recipientRaw !== null) {
      recipient = recipientRaw.trim();
      if (recipient === '') {
        ok = false;
        this.report(
          location,
          'recipient',
          undefined,
          "is missing: write the recipient's e-mail address, telephone number or identifier",
        );
      } else ok = this.checkShown(location, 'recipient', recipient) && ok;
    }

    let description: string | undefined;
    if (descriptionRaw !== null && descriptionRaw !== undefined) {
      const text = descriptionRaw.trim();
      if (text !== '') description = text;
      ok = this.checkShown(location, 'description', text) && ok;
      // A UTF-16 length within the limit is within it in code points too: skip the count.
      if (text.length > DESCRIPTION_MAX) {
        const length = codePointLength(text);
        if (length > DESCRIPTION_MAX) {
          ok = false;
          this.report(
            location,
            'description',
            excerpt(text),
            `is ${length} characters long; the service accepts at most ${DESCRIPTION_MAX}: shorten it`,
          );
        }
      }
    }

    if (!ok || amount === undefined || currency === undefined || !currency.ok) {
      if (reference !== '') this.sink.refused?.(reference, this.file, locationText(location));
      return false;
    }
    this.sink.payout(
      new PayoutRow(
        this.file,
        location,
        reference,
        amount,
        currency.code,
        recipient,
        description,
        retryOf === reference ? undefined : retryOf,
      ),
    );
    return true;
  }

  /** Reports one problem of a row. */
  report(
    location: RowLocation | undefined,
    field: PayoutField | string | undefined,
    value: string | undefined,
    message: string,
    more: Pick<Problem, 'map'> = {},
  ): void {
    const p: Problem = { file: this.file, message, ...more };
    if (location !== undefined) p.location = locationText(location);
    if (field !== undefined) p.field = field;
    if (value !== undefined) p.value = value;
    this.sink.problem(p);
  }

  /** Reads an amount's text: the amount, or why it is refused. */
  private amount(raw: string, digits: number | undefined): Amount | string {
    if (this.amounts.decimalComma) {
      const point = decimalCommaToPoint(raw);
      return point.ok ? readAmount(point.text, digits) : point.message;
    }
    const read = readAmount(raw, digits);
    if (typeof read === 'string' && this.amounts.hint) return decimalCommaHint(raw) ?? read;
    return read;
  }

  /**
   * Reports a recipient or description holding a control character (a line break among them)
   * or an invisible character that changes how text shows; true when it holds none.
   */
  private checkShown(location: RowLocation, field: PayoutField, text: string): boolean {
    const hidden = firstHiddenCharacter(text, 'all');
    if (hidden === undefined) return true;
    const why =
      hidden.kind === 'control'
        ? `holds the control character ${hidden.name} at character ${hidden.at}; a ${field} must be one line of visible text`
        : hidden.kind === 'format'
          ? `holds ${hidden.name} at character ${hidden.at}, an invisible character that changes how the text shows, so the confirmation or a statement could show other text than the one sent`
          : `holds half of a UTF-16 surrogate pair (${hidden.name}) at character ${hidden.at}, which is not a character`;
    this.report(location, field, excerpt(text), `${why}: remove it from the file and run again`);
    return false;
  }

  /** Reports a reference that is missing or could not be looked up again; true when usable. */
  private checkReference(location: RowLocation, reference: string): boolean {
    if (reference === '') {
      this.report(
        location,
        'reference_id',
        undefined,
        'is missing: give each payout its own reference, such as payout-0001',
      );
      return false;
    }
    const refused = referenceProblem(reference);
    if (refused === undefined) return true;
    this.report(location, 'reference_id', reference, `${refused.reason}: ${refused.fix}`);
    return false;
  }

  /**
   * Reports a retry row whose reference_id (the payout it retries) is missing, or whose
   * new_reference_id differs from it only by what cannot be seen: a person could not tell the
   * retry from the payout it retries. True when usable.
   */
  private checkRetryOf(location: RowLocation, fresh: string, retryOf: string | undefined): boolean {
    if (retryOf === undefined) {
      this.report(
        location,
        'reference_id',
        undefined,
        'is missing on a row with a new_reference_id: a retry names the reference_id of the payout it retries (as `payouts runs show RUN --failed-out` writes it)',
      );
      return false;
    }
    if (fresh === retryOf || fresh === '') return true;
    const folded = foldedReference(fresh) ?? fresh;
    if (folded !== (foldedReference(retryOf) ?? retryOf)) return true;
    this.report(
      location,
      'new_reference_id',
      fresh,
      `looks the same as the reference_id ${JSON.stringify(retryOf)} it retries (they differ only by invisible characters or Unicode normalisation): choose a new reference_id that reads differently, such as ${retryOf}-R1`,
    );
    return false;
  }

  private currency(raw: string): CurrencyOutcome {
    // Most files use one currency throughout: compare with the last one before hashing.
    if (raw === this.lastCurrencyRaw) return this.lastCurrency!;
    const outcome = this.lookupCurrency(raw);
    this.lastCurrencyRaw = raw;
    this.lastCurrency = outcome;
    return outcome;
  }

  private lookupCurrency(raw: string): CurrencyOutcome {
    const cached = this.currencyCache.get(raw);
    if (cached !== undefined) return cached;
    const outcome = this.readCurrency(raw);
    if (this.currencyCache.size < CURRENCY_CACHE_LIMIT) this.currencyCache.set(raw, outcome);
    return outcome;
  }

  private readCurrency(raw: string): CurrencyOutcome {
    const text = raw.trim();
    if (text === '') {
      return {
        ok: false,
        value: undefined,
        message: 'is missing: write the three-letter ISO 4217 code, such as USD or EUR',
      };
    }
    const code = text.toUpperCase();
    if (!THREE_LETTERS.test(code)) {
      const message = CURRENCY_SYMBOL.test(text)
        ? 'write the three-letter ISO 4217 code instead of the symbol, such as USD or EUR'
        : 'must be a three-letter ISO 4217 code, such as USD or EUR';
      return { ok: false, value: text, message };
    }
    const digits = this.currencies.minorUnits(code);
    if (digits === undefined) {
      return {
        ok: false,
        value: text,
        message: `not an ISO 4217 currency code: check it, or pass --allow-currency ${code}`,
      };
    }
    return { ok: true, code, digits };
  }
}
