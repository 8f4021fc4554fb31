/**
 * An ajv error in words: apart from the validators and the YAML parser, so that code which only reports a schema
 * error (the Control API client, the server's request checks) does not load them.
 */
export interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** What an ajv error expects, in words (shared with the Control API's request validation). */
export function describeSchemaError(error: AjvError): string {
  const p = error.params;
  switch (error.keyword) {
    case 'additionalProperties':
      return `has an unknown field "${String(p.additionalProperty)}"`;
    case 'required':
      return `is missing the required field "${String(p.missingProperty)}"`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'propertyNames':
      return `has an unknown key "${String(p.propertyName)}"`;
    default:
      return error.message ?? 'is invalid';
  }
}
