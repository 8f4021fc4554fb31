/**
 * Blue's client negotiation on `GET /governance-config`: a revision may need a newer governance contract than the
 * client speaks (`contract_version`) or capabilities it lacks (`required_capabilities`), which the client states in
 * headers; such a client is answered 426 rather than given a document it would misread. A revision may also pin the
 * client release the organisation wants (`required_client_version`), repeated in a header on 200 and 426 alike.
 */

export const CONTRACT_VERSION_HEADER = 'x-blue-contract-version';
export const CLIENT_CAPABILITIES_HEADER = 'x-blue-capabilities';
export const REQUIRED_CLIENT_VERSION_HEADER = 'x-blue-required-client-version';

/** The capabilities Blue's clients may declare and a revision may require. */
export const KNOWN_CAPABILITIES = [
  'adapter_intervals',
  'compiled_harness_registry',
  'dynamic_verified_ceilings',
  'gateway_inference_jwt',
  'gateway_model_catalog',
  'tenant_client_version_pin',
  'transactional_reconcile',
  'unverified_harness_versions',
  'versioned_state',
] as const;

const EXACT_SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

export function requiredClientVersion(body: Record<string, unknown>): string | undefined {
  return typeof body.required_client_version === 'string' ? body.required_client_version : undefined;
}

/**
 * Why a client that sent these headers cannot take this revision; undefined when it can. A missing or unreadable
 * contract version counts as 1, as in Blue's server.
 */
export function unmetContract(
  body: Record<string, unknown>,
  versionHeader: string | undefined,
  capabilitiesHeader: string | undefined,
): string | undefined {
  const needed = typeof body.contract_version === 'number' ? body.contract_version : 1;
  const parsed =
    versionHeader === undefined || !/^\d{1,9}$/.test(versionHeader.trim()) ? 1 : Number(versionHeader.trim());
  if (parsed < needed) return `governance contract ${needed} requires a newer client; the client reports ${parsed}`;
  const declared = new Set(
    (capabilitiesHeader ?? '')
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c !== ''),
  );
  const required = Array.isArray(body.required_capabilities)
    ? body.required_capabilities.filter((c): c is string => typeof c === 'string')
    : [];
  const missing = required.filter((c) => !declared.has(c));
  if (missing.length > 0) return `governance requires client capabilities it did not declare: ${missing.join(', ')}`;
  return undefined;
}

/** What a revision must satisfy to be published, beyond its schema; the problems, in words. */
export function governanceProblems(body: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const required = Array.isArray(body.required_capabilities) ? body.required_capabilities : [];
  for (const capability of required) {
    if (typeof capability !== 'string' || !(KNOWN_CAPABILITIES as readonly string[]).includes(capability)) {
      problems.push(
        `required_capabilities names ${JSON.stringify(capability).slice(0, 80)}, which no client declares; use ` +
          `${KNOWN_CAPABILITIES.join(', ')}`,
      );
    }
  }
  const pin = body.required_client_version;
  if (pin !== undefined) {
    if (typeof pin !== 'string' || !EXACT_SEMVER.test(pin)) {
      problems.push(
        `required_client_version must be one exact release such as 1.4.2, not ${JSON.stringify(pin).slice(0, 80)}`,
      );
    } else if (!required.includes('tenant_client_version_pin')) {
      problems.push(
        'required_client_version needs tenant_client_version_pin in required_capabilities, so that clients that ' +
          'cannot honour the pin are refused',
      );
    }
  }
  const floor = body.minimum_client_version;
  if (floor !== undefined && (typeof floor !== 'string' || !EXACT_SEMVER.test(floor))) {
    problems.push(`minimum_client_version must be a release such as 1.4.0, not ${JSON.stringify(floor).slice(0, 80)}`);
  }
  return problems;
}
