/**
 * ISO 4217 active currency codes and their minor units (number of decimals), from the
 * ISO 4217 list one (amendment 179, 2025). Funds codes, precious metals and test codes
 * with no minor unit ("N.A.") are left out: they are not payout currencies.
 * Intl.NumberFormat is not used because CLDR differs from ISO for several codes
 * (for example IQD, where ISO says 3 and CLDR 0).
 */
const MINOR_UNITS_BY_DIGITS: Record<number, string> = {
  0: 'BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF',
  2: [
    'AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD BTN BWP BYN BZD',
    'CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL',
    'GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR',
    'LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD',
    'PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC',
    'SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XCD XCG YER ZAR ZMW',
    'ZWG',
  ].join(' '),
  3: 'BHD IQD JOD KWD LYD OMR TND',
  4: 'CLF UYW',
};

const MINOR_UNITS: ReadonlyMap<string, number> = new Map(
  Object.entries(MINOR_UNITS_BY_DIGITS).flatMap(([digits, codes]) =>
    codes.split(' ').map((code) => [code, Number(digits)] as const),
  ),
);

/** Decimals of a currency outside ISO 4217 that the user allowed without saying how many. */
export const DEFAULT_EXTRA_CURRENCY_DIGITS = 2;

/** The ISO 4217 minor unit of a currency code, or undefined when the code is not ISO 4217. */
export function isoMinorUnits(code: string): number | undefined {
  return MINOR_UNITS.get(code);
}

/** Currencies accepted in a run: ISO 4217 plus codes the user allowed, with their decimals. */
export class CurrencyTable {
  private readonly extra: Map<string, number>;

  constructor(extra: Iterable<[string, number]> = []) {
    this.extra = new Map(extra);
  }

  /** Decimals allowed for a code, or undefined when the code is not accepted. */
  minorUnits(code: string): number | undefined {
    return MINOR_UNITS.get(code) ?? this.extra.get(code);
  }
}
