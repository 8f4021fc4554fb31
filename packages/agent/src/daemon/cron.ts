/**
 * The drain schedule: a cron expression (5 fields, or 6 with seconds first) in local time, and a timer that fires at
 * each of its times. Written here rather than taken from a cron package because the agent stays resident: the one it
 * replaces formatted every tick through Intl.DateTimeFormat, which pages ICU's data into the agent (resident memory far
 * beyond what the rest of its schedule needs: bench/run-idle.mjs). Date's own local-time getters need none of it.
 *
 * Fields: `*`, `?` (day fields), numbers, ranges `a-b`, steps `*\/n`, `a-b/n` and `a/n`, lists `a,b`, month and
 * weekday names (`jan` or `january`, `mon` or `monday`), 7 for Sunday, and `d#n` (the n-th weekday d of the month).
 * As in Vixie cron, when both day-of-month and day-of-week are restricted (neither starts with `*`), a day matching
 * either runs. Times inside the hour skipped when clocks go forward do not occur that day.
 */

export interface CronSpec {
  seconds: ReadonlySet<number>;
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  days: ReadonlySet<number>;
  months: ReadonlySet<number>;
  /** 0-6, Sunday 0. */
  weekdays: ReadonlySet<number>;
  /** `d#n`: weekday d, n-th of its month (1-5). */
  nthWeekdays: readonly { weekday: number; nth: number }[];
  daysRestricted: boolean;
  weekdaysRestricted: boolean;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const MONTH_NAMES = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const WEEKDAY_NAMES = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
/** Days searched for the next time at most: a spec that never comes due within them (30 February) has none. */
const SEARCH_DAYS = 8 * 366;
/** A timer never waits longer than this before it looks again (the clock may have been changed meanwhile). */
const MAX_WAIT_MS = 60 * 60_000;

interface FieldRule {
  min: number;
  max: number;
  names?: readonly string[];
  /** The same values spelled out (`monday`, `january`). */
  longNames?: readonly string[];
  /** Names count from this number (months from 1). */
  nameBase?: number;
}

const RULES = {
  second: { min: 0, max: 59 },
  minute: { min: 0, max: 59 },
  hour: { min: 0, max: 23 },
  day: { min: 1, max: 31 },
  month: { min: 1, max: 12, names: MONTHS, longNames: MONTH_NAMES, nameBase: 1 },
  weekday: { min: 0, max: 7, names: WEEKDAYS, longNames: WEEKDAY_NAMES, nameBase: 0 },
} satisfies Record<string, FieldRule>;

/** The parsed expression, or why it is not one. */
export function parseCron(expr: string): CronSpec | string {
  const fields = expr.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6)
    return `a cron expression has 5 fields (or 6, seconds first), not ${fields.length}`;
  const [second, minute, hour, day, month, weekday] = fields.length === 6 ? fields : ['0', ...fields];
  const nth: { weekday: number; nth: number }[] = [];
  const parsed = {
    seconds: field(second!, RULES.second, 'seconds'),
    minutes: field(minute!, RULES.minute, 'minutes'),
    hours: field(hour!, RULES.hour, 'hours'),
    days: field(day!, RULES.day, 'day of month', true),
    months: field(month!, RULES.month, 'month'),
    weekdays: field(weekday!, RULES.weekday, 'day of week', true, nth),
  };
  for (const value of Object.values(parsed)) if (typeof value === 'string') return value;
  const weekdays = new Set([...(parsed.weekdays as Set<number>)].map((d) => (d === 7 ? 0 : d)));
  const spec: CronSpec = {
    seconds: parsed.seconds as Set<number>,
    minutes: parsed.minutes as Set<number>,
    hours: parsed.hours as Set<number>,
    days: parsed.days as Set<number>,
    months: parsed.months as Set<number>,
    weekdays,
    nthWeekdays: nth,
    // As Vixie cron: a day field that starts with `*` (`*/2` too) or is `?` does not restrict the day.
    daysRestricted: !(day!.startsWith('*') || day === '?'),
    weekdaysRestricted: !(weekday!.startsWith('*') || weekday === '?'),
  };
  if (nextCronTime(spec, new Date()) === undefined) return `"${expr.trim()}" never comes due`;
  return spec;
}

export function validCron(expr: string): boolean {
  return typeof parseCron(expr) !== 'string';
}

function field(
  text: string,
  rule: FieldRule,
  what: string,
  question = false,
  nth?: { weekday: number; nth: number }[],
): Set<number> | string {
  const out = new Set<number>();
  const bad = (why: string) => `the ${what} field "${text}" ${why}`;
  if (question && text === '?') text = '*';
  for (const part of text.split(',')) {
    if (nth !== undefined && part.includes('#')) {
      const m = /^([0-7]|[a-z]{3,9})#([1-5])$/i.exec(part);
      const weekday = m === null ? undefined : value(m[1]!, rule);
      if (m === null || weekday === undefined) return bad('has a bad d#n (weekday, then 1 to 5)');
      nth.push({ weekday: weekday === 7 ? 0 : weekday, nth: Number(m[2]) });
      continue;
    }
    const m = /^(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:\/([0-9]+))?$/i.exec(part);
    if (m === null) return bad('is not a cron field');
    let [from, to] = [rule.min, rule.max];
    if (m[1] !== '*') {
      const [a, b] = m[1]!.split('-');
      const start = value(a!, rule);
      const end = b === undefined ? (m[2] === undefined ? start : rule.max) : value(b, rule);
      if (start === undefined || end === undefined) return bad(`holds a value outside ${rule.min}-${rule.max}`);
      if (end < start) return bad('has a range that runs backwards');
      [from, to] = [start, end];
    }
    const step = m[2] === undefined ? 1 : Number(m[2]);
    if (!Number.isSafeInteger(step) || step < 1 || step > rule.max + 1) return bad('has a step that is not 1 or more');
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

function value(text: string, rule: FieldRule): number | undefined {
  const lower = text.toLowerCase();
  const named = Math.max(rule.names?.indexOf(lower) ?? -1, rule.longNames?.indexOf(lower) ?? -1);
  if (named >= 0) return named + (rule.nameBase ?? 0);
  if (!/^[0-9]{1,2}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= rule.min && n <= rule.max ? n : undefined;
}

function dayMatches(spec: CronSpec, date: Date): boolean {
  const weekday = date.getDay();
  const inMonth = spec.days.has(date.getDate());
  const inWeek =
    spec.weekdays.has(weekday) ||
    spec.nthWeekdays.some((n) => n.weekday === weekday && Math.ceil(date.getDate() / 7) === n.nth);
  if (spec.daysRestricted && spec.weekdaysRestricted) return inMonth || inWeek;
  return inMonth && inWeek;
}

/** The first time after `after` (to the second, local time) that the spec names; undefined when there is none soon. */
export function nextCronTime(spec: CronSpec, after: Date): Date | undefined {
  // Seconds and minutes advance in absolute time: a local-time setter inside the hour repeated when clocks go back
  // reads the time as its first occurrence and would step backwards. Hours, days and months use local time, as a
  // schedule means them; a step that lands at or before `after` (that same hour) is stepped past.
  const t = new Date(Math.floor(after.getTime() / 1000) * 1000 + 1000);
  const limit = after.getTime() + SEARCH_DAYS * 86_400_000;
  while (t.getTime() <= limit) {
    if (!spec.months.has(t.getMonth() + 1)) {
      const before = t.getTime();
      t.setMonth(t.getMonth() + 1, 1);
      t.setHours(0, 0, 0, 0);
      if (t.getTime() <= before) t.setTime(before + 3600_000);
    } else if (!dayMatches(spec, t)) {
      const before = t.getTime();
      t.setDate(t.getDate() + 1);
      t.setHours(0, 0, 0, 0);
      if (t.getTime() <= before) t.setTime(before + 3600_000);
    } else if (!spec.hours.has(t.getHours())) {
      const before = t.getTime();
      t.setHours(t.getHours() + 1, 0, 0, 0);
      if (t.getTime() <= before) t.setTime((Math.floor(before / 3600_000) + 1) * 3600_000);
    } else if (!spec.minutes.has(t.getMinutes())) {
      t.setTime((Math.floor(t.getTime() / 60_000) + 1) * 60_000);
    } else if (!spec.seconds.has(t.getSeconds())) {
      t.setTime(t.getTime() + 1000);
    } else if (t.getTime() <= after.getTime()) {
      t.setTime(t.getTime() + 1000);
    } else {
      return t;
    }
  }
  return undefined;
}

export interface CronTimer {
  /** When it fires next (ms), undefined once stopped. */
  nextAt(): number | undefined;
  stop(): void;
}

/** Calls `tick` at every time `expr` names, from now on, until stopped. Throws on an expression that is not one. */
export function scheduleCron(expr: string, tick: () => void, now: () => number = Date.now): CronTimer {
  const spec = parseCron(expr);
  if (typeof spec === 'string') throw new Error(spec);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let due = nextCronTime(spec, new Date(now()));
  const arm = () => {
    if (stopped || due === undefined) return;
    timer = setTimeout(
      () => {
        if (stopped || due === undefined) return;
        // Fired early (the wait was capped, or the clock went back): wait for the first time due from now, which is
        // never later than the one awaited.
        if (now() < due.getTime()) {
          due = nextCronTime(spec, new Date(now() - 1000)) ?? due;
          return arm();
        }
        due = nextCronTime(spec, new Date(Math.max(now(), due.getTime())));
        arm();
        tick();
      },
      Math.min(MAX_WAIT_MS, Math.max(0, due.getTime() - now())),
    );
  };
  arm();
  return {
    nextAt: () => (stopped ? undefined : due?.getTime()),
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
