/** Business calendar rows: mapping to domain values, and the claim's resolution of a job's calendars. */
import {
  businessCalendarOf,
  calendarDefinitionFromStore,
  type BusinessCalendar,
  type StoredCalendar,
} from '@tickwork/domain';

/** A business_calendars row as read (definition jsonb). */
export interface CalendarRow {
  tenant_id: string | null;
  name: string;
  version: number | string;
  definition: Record<string, unknown>;
  created_at?: Date | string;
  updated_at?: Date | string;
}

/**
 * The calendars a job's policies.calendars name, as resolved for its tenant (own before shared), as a
 * json array column of a claim's row (`j` is the jobs row).
 */
export const JOB_CALENDARS_SQL = `(SELECT json_agg(json_build_object('tenant_id', c.tenant_id, 'name', c.name, 'version', c.version, 'definition', c.definition))
         FROM business_calendars c
        WHERE j.policies ? 'calendars'
          AND c.name IN (SELECT jsonb_array_elements_text(j.policies -> 'calendars'))
          AND (c.tenant_id = j.tenant_id
               OR (c.tenant_id IS NULL AND NOT EXISTS (
                     SELECT 1 FROM business_calendars o WHERE o.tenant_id = j.tenant_id AND o.name = c.name))))`;

/** A stored calendar row as the domain's StoredCalendar. */
export function storedCalendarFromRow(row: CalendarRow): StoredCalendar {
  const { definition, generated } = calendarDefinitionFromStore(row.definition);
  return {
    tenantId: row.tenant_id,
    name: row.name,
    version: Number(row.version),
    definition,
    generated,
    createdAt: new Date(row.created_at ?? 0),
    updatedAt: new Date(row.updated_at ?? 0),
  };
}

/** A stored calendar row as the domain's BusinessCalendar (hand-listed and generated holidays). */
export function calendarFromRow(row: CalendarRow): BusinessCalendar {
  return businessCalendarOf(storedCalendarFromRow(row));
}
