import { ParseUUIDPipe, ValidationPipe, type ValidationError as ClassValidatorError } from '@nestjs/common';
import { ValidationError } from '../domain/errors';

function flatten(errors: readonly ClassValidatorError[], prefix = ''): { field: string; problems: string[] }[] {
  return errors.flatMap((e) => {
    const field =
      prefix === '' ? e.property : /^\d+$/.test(e.property) ? `${prefix}[${e.property}]` : `${prefix}.${e.property}`;
    const own = e.constraints ? [{ field, problems: Object.values(e.constraints) }] : [];
    return [...own, ...flatten(e.children ?? [], field)];
  });
}

/** Body and query validation: unknown fields are refused, and failures are a `validation_error`. */
export function apiValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    exceptionFactory: (errors) => {
      const fields = flatten(errors);
      const message = fields
        .map((f) => f.problems.map((p) => (p.startsWith(f.field) ? p : `${f.field}: ${p}`)).join('; '))
        .join('; ');
      return new ValidationError(message || 'request is invalid', { fields });
    },
  });
}

/** A path parameter that must be a UUID (400 otherwise, before anything is read). */
export function uuidParam(name: string): ParseUUIDPipe {
  return new ParseUUIDPipe({ exceptionFactory: () => new ValidationError(`${name} must be a UUID`, { field: name }) });
}
